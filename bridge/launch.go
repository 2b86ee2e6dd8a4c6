// Launch plans: how a case's tensors become one kernel launch. Each kernel
// of kernels/ has a packer here (topk.go, normrope.go) that reads the
// case's params JSON and tensor shapes, checks them against the C header's
// preconditions, and packs the C parameter struct with device pointers.

package bridge

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

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

// packers returns the launchers of the kernels this package knows, by
// contract name.
func packers() map[string]packer {
	return map[string]packer{
		"topk_transform":  packTopk,
		"norm_rope_store": packNormRope,
	}
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

// ceilDiv returns ⌈a / b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// gridX converts a block count to a grid dimension, rejecting counts the
// hardware cannot launch (grid.x ≤ 2^31 − 1).
func gridX(blocks int64, what string) (uint32, error) {
	if blocks > 1<<31-1 {
		return 0, difftest.Inputf(what, nil, "needs %d blocks, more than grid.x allows (2^31 - 1)", blocks)
	}
	return uint32(blocks), nil
}

func fmtEntry(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// entryParam is the one parameter a launcher packs for an entry point: the
// kernel's C struct, passed by value.
type entryParam struct {
	Struct string // C type name
	Header string // the header that declares it, from the repository root
	Size   int    // sizeof as cgo compiled it, bytes
}

// entryParams lists every entry point the launchers call, with the
// parameter they pack for it.
func entryParams() map[string]entryParam {
	m := map[string]entryParam{
		"kd_norm_rope_store": {"kd_normrope_params", "kernels/normrope/normrope.h", normRopeParamsSize},
	}
	for _, k := range topkEntryKs {
		m[fmtEntry("kd_topk_transform_%d", k)] = entryParam{"kd_topk_params", "kernels/topk/topk.h", topkParamsSize}
	}
	return m
}

// checkFatbinParams checks, before anything runs, that each image of the
// module file at path (contents b: a fatbin, or a single cubin or PTX
// text, as cuModuleLoadData takes them) declares every entry point of
// entries that it defines with exactly one parameter, at offset 0, of the
// size the launcher packs. A kernel compiled from another version of its
// header would read a shifted or truncated struct; this names the image,
// the entry, both layouts and the fix. An entry an image does not define
// is not an error here (cuModuleGetFunction fails that kernel's cases),
// and a file that is none of the three is left to the driver, which
// rejects it with CUDA_ERROR_INVALID_IMAGE. Errors also come from a
// malformed fatbin container or an image whose layout cannot be read
// (cuda.ParseFatbin, cuda.ImageParams).
func checkFatbinParams(path string, b []byte, entries map[string]entryParam) error {
	var imgs []cuda.FatbinImage
	switch {
	case len(b) >= 4 && binary.LittleEndian.Uint32(b) == cuda.FatbinMagic:
		var err error
		if imgs, err = cuda.ParseFatbin(b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case bytes.HasPrefix(b, []byte(elf.ELFMAG)):
		imgs = []cuda.FatbinImage{{Kind: cuda.KindELF, Size: len(b)}}
	case bytes.Contains(b, []byte(".entry")):
		imgs = []cuda.FatbinImage{{Kind: cuda.KindPTX, Size: len(b)}}
	}
	for _, im := range imgs {
		decl, err := cuda.ImageParams(b, im)
		if err != nil {
			return fmt.Errorf("fatbin %s: %w", path, err)
		}
		names := make([]string, 0, len(decl))
		for name := range decl {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			want, ok := entries[name]
			if !ok {
				continue
			}
			ps := decl[name]
			if len(ps) == 1 && ps[0].Offset == 0 && ps[0].Size == want.Size {
				continue
			}
			got := make([]string, len(ps))
			for i, p := range ps {
				got[i] = fmt.Sprintf("%d bytes at offset %d", p.Size, p.Offset)
			}
			return fmt.Errorf("fatbin %s: %s image: %s takes %d parameter(s) [%s]; the launcher packs one %s of %d bytes (%s as this difftest was built): the fatbin and difftest come from different versions of the header; rebuild both (make kernels difftest)",
				path, im.ArchName(), name, len(ps), strings.Join(got, ", "), want.Struct, want.Size, want.Header)
		}
	}
	return nil
}
