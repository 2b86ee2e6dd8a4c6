// Package testfatbin holds a small fatbin for tests of the readers of
// kernel parameter layouts (cuda.ImageParams and bridge's check against the
// launchers). It is compiled into the test binaries, so they need no files
// beside them on a GPU machine.
package testfatbin

import _ "embed"

// KParams is kparams.fatbin: nvcc 13.0 built kparams.cu (make-kparams) into
// SASS for sm_90 and PTX for compute_90, stored uncompressed. Its kernels
// kp_none, kp_scalars and kp_structs take no parameters, five scalars, and
// scalars mixed with structs of 24 and 20 bytes; the layouts cuobjdump
// lists for them are in cuda/kparams_test.go.
//
//go:embed kparams.fatbin
var KParams []byte
