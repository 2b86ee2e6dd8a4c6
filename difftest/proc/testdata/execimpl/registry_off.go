//go:build !kd_kernels

package main

import (
	"encoding/json"
	"fmt"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// registryOutputs: without -tags kd_kernels no kernel package is linked.
func registryOutputs(kernel, _ string, _ json.RawMessage, _ map[string]*difftest.Tensor) ([]*difftest.Tensor, int, error) {
	return nil, 0, fmt.Errorf("kernel %q unknown (build with -tags kd_kernels for the registered kernels)", kernel)
}
