package proc

import (
	"context"
	"time"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// NewServeImplHello is NewServeImpl with the hello time-out given.
func NewServeImplHello(cmd string, timeout, hello time.Duration) (difftest.Impl, error) {
	return newServeImpl(context.Background(), cmd, timeout, hello)
}

// NewServeImplHelloContext is NewServeImplHello with a context.
var NewServeImplHelloContext = newServeImpl

// NewSealedShm is newSealedShm.
var NewSealedShm = newSealedShm
