package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/bridge"
	"github.com/kerneldiff/kerneldiff/cmd/difftest/internal/cli"
	"github.com/kerneldiff/kerneldiff/difftest"
)

// --build-timeout defaults to the bridge's limit of an adapter build, and
// a limit ≤ 0 is a usage error naming the flag.
func TestBuildTimeoutFlag(t *testing.T) {
	var o, e bytes.Buffer
	cli.MainAs(context.Background(), "difftest", []string{"run", "--help"}, &o, &e)
	if want := fmt.Sprintf("(default %v)", bridge.CudasrcBuildTimeout); !strings.Contains(e.String()+o.String(), "-build-timeout duration") || !strings.Contains(e.String()+o.String(), want) {
		t.Errorf("run --help lacks --build-timeout with %s:\n%s%s", want, o.String(), e.String())
	}
	for _, v := range []string{"0", "-1m"} {
		o.Reset()
		e.Reset()
		code := cli.MainAs(context.Background(), "difftest", []string{"run", "--impl", "reference", "--suite", "internal/cli/testdata/normrope-n96.toml", "--build-timeout", v}, &o, &e)
		if code != difftest.ExitUsage || !strings.Contains(e.String(), "--build-timeout") {
			t.Errorf("--build-timeout %s: exit %d, stderr %q", v, code, e.String())
		}
	}
}
