// Package all imports every kernel package of kernels/, so that each
// registers its contract with difftest (difftest.RegisterKernel). It is the
// Go side of the one list of kernels (docs/adding-a-kernel.md): its import
// list, all_gen.go, is generated from the kernel folders by
// internal/kernelsgen, never written by hand. Import it for its side effect:
//
//	import _ "github.com/kerneldiff/kerneldiff/kernels/all"
package all

//go:generate go run ../../internal/kernelsgen
