// Launch plans: how a case's tensors become one kernel launch. Each kernel
// of kernels/ has a packer here (topk.go, normrope.go, logits.go) that reads the
// case's params JSON and tensor shapes, checks them against the C header's
// preconditions, and packs the C parameter struct with device pointers.

package bridge

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
)

// devTensor is one tensor as a packer sees it: contract name, dtype,
// shape, and its device address (0 in a dry run, or for an empty tensor).
type devTensor struct {
	DType difftest.DType
	Shape []int
	Ptr   cuda.DevicePtr
}

// launch is one cuLaunchKernel call. A zero Grid.X means there is nothing
// to launch (an empty batch); the outputs then keep their poison, which is
// what the contract asks of an empty case.
type launch struct {
	Entry     string // extern "C" entry point in the fatbin
	Grid      cuda.Dim3
	Block     cuda.Dim3
	SharedMem uint32
	Args      [][]byte // one element per kernel parameter: the packed C struct
}

// packer turns a case into a launch. params is the case's params JSON;
// tensors maps contract names (inputs and outputs) to their device view.
// A dry run (every Ptr 0) validates without a device. Errors are
// *difftest.InputError naming the tensor or parameter and the rule.
type packer func(params json.RawMessage, tensors map[string]devTensor) (launch, error)

// packers returns the packers of the registered launchers (launchers.go),
// by contract name.
func packers() map[string]packer {
	m := make(map[string]packer, len(launchers))
	for name, l := range launchers {
		m[name] = l.Pack
	}
	return m
}

// axis pins dimension i of a tensor to want; what names want in the error.
type axis struct {
	i, want int
	what    string
}

// need returns the tensor with that name after checking dtype, rank and
// then each pinned axis, in order.
func need(ts map[string]devTensor, name string, dtype difftest.DType, rank int, axes ...axis) (devTensor, error) {
	t, ok := ts[name]
	if !ok {
		return devTensor{}, difftest.Inputf(name, nil, "missing from the case")
	}
	if t.DType != dtype {
		return t, difftest.Inputf(name, nil, "dtype must be %s, got %s", dtype, t.DType)
	}
	if len(t.Shape) != rank {
		return t, difftest.Inputf(name, nil, "rank must be %d, got shape %v", rank, t.Shape)
	}
	for _, a := range axes {
		if err := dim(t, name, a.i, a.want, a.what); err != nil {
			return t, err
		}
	}
	return t, nil
}

// optional is need for a tensor the case may leave out: when it is
// absent, present is false and ptr is 0 (NULL to the kernel).
func optional(ts map[string]devTensor, name string, dtype difftest.DType, rank int, axes ...axis) (ptr cuda.DevicePtr, present bool, err error) {
	if _, present = ts[name]; !present {
		return 0, false, nil
	}
	t, err := need(ts, name, dtype, rank, axes...)
	return t.Ptr, true, err
}

// dim checks one dimension against its expected value.
func dim(t devTensor, name string, axis, want int, what string) error {
	if t.Shape[axis] != want {
		return difftest.Inputf(name, nil, "dimension %d is %d, must equal %s = %d", axis, t.Shape[axis], what, want)
	}
	return nil
}

// log2Exact returns log2 of a power of two p ≥ 1, or an error naming the
// parameter.
func log2Exact(name string, p int) (int32, error) {
	if p < 1 || p&(p-1) != 0 || p > 1<<30 {
		return 0, difftest.Inputf(name, nil, "page size must be a power of two in [1, 2^30], got %d", p)
	}
	s := int32(0)
	for 1<<s < p {
		s++
	}
	return s, nil
}

// decodeParams decodes the case's params JSON into v (fields the launch
// does not need are ignored); a missing or undecodable params value is an
// *InputError on "params".
func decodeParams(kernel string, raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return difftest.Inputf("params", nil, "%s case has no params", kernel)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return difftest.Inputf("params", nil, "%s params do not decode: %v", kernel, err)
	}
	return nil
}

// decoded is kernel's packer over pack: it decodes the case's params JSON
// into a P (decodeParams: fields the launch does not need are ignored, a
// missing or undecodable params value is an *InputError on "params") and
// hands it to pack with the tensors.
func decoded[P any](kernel string, pack func(p P, tensors map[string]devTensor) (launch, error)) packer {
	return func(raw json.RawMessage, tensors map[string]devTensor) (launch, error) {
		var p P
		if err := decodeParams(kernel, raw, &p); err != nil {
			return launch{}, err
		}
		return pack(p, tensors)
	}
}

// ceilDiv returns ⌈a / b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// fmtEntry formats an entry point name, "kd_topk_transform_%d".
func fmtEntry(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// blockLaunch is a launch of entry in blocks of threads threads with smem
// bytes of dynamic shared memory, and nothing to launch yet (Grid.X 0, no
// arguments): what a packer returns for an empty case (see over).
func blockLaunch(entry string, threads, smem int) launch {
	return launch{Entry: entry, Block: cuda.Dim3{X: uint32(threads), Y: 1, Z: 1}, SharedMem: uint32(smem)}
}

// over returns l over a one-dimensional grid of blocks blocks, its one
// kernel argument a size-byte buffer (the C parameter struct passed by
// value) that pack fills; out is its first byte, for a cgo kd_pack_*
// function that memcpy's the struct there. No blocks is an empty case: l
// comes back as it is, nothing to launch, and pack is not called. More
// blocks than the hardware can launch (grid.x ≤ 2^31 − 1) is an
// *InputError on what.
func (l launch) over(blocks int64, what string, size int, pack func(out unsafe.Pointer)) (launch, error) {
	if blocks == 0 {
		return l, nil
	}
	if blocks > 1<<31-1 {
		return launch{}, difftest.Inputf(what, nil, "needs %d blocks, more than grid.x allows (2^31 - 1)", blocks)
	}
	arg := make([]byte, size)
	pack(unsafe.Pointer(&arg[0]))
	l.Grid = cuda.Dim3{X: uint32(blocks), Y: 1, Z: 1}
	l.Args = [][]byte{arg}
	return l, nil
}

// cFlag is a C int flag: 1 for true, 0 for false.
func cFlag(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// enum maps a params string to its C header enum value (or flag).
func enum(name, got string, values map[string]int32) (int32, error) {
	v, ok := values[got]
	if !ok {
		return 0, difftest.Inputf(name, nil, "unknown value %q", got)
	}
	return v, nil
}
