package bridge

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/cuda/fakecuda"
	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
)

// packedArgs reads the little-endian fields of a packed kd_*_params struct
// as a fake kernel receives it (args[0]), at the byte offsets its layout
// test pins.
type packedArgs []byte

// i64 is the int64 field at byte offset off.
func (a packedArgs) i64(off int) int { return int(int64(binary.LittleEndian.Uint64(a[off:]))) }

// i32 is the int32 field at byte offset off.
func (a packedArgs) i32(off int) int { return int(int32(binary.LittleEndian.Uint32(a[off:]))) }

// u32 is the raw 32-bit field at byte offset off (a float's bits).
func (a packedArgs) u32(off int) uint32 { return binary.LittleEndian.Uint32(a[off:]) }

// devTensorAt is one tensor a fake kernel reads from device memory: the
// byte offset of its pointer in the packed struct, its name, dtype and shape.
type devTensorAt struct {
	off   int
	name  string
	dt    difftest.DType
	shape []int
}

// deviceTensors rebuilds tensors from the fake device's memory at the
// pointers packed in a, keeping each in ts by name.
type deviceTensors struct {
	d  *fakecuda.Driver
	a  []byte
	ts map[string]*difftest.Tensor
}

func newDeviceTensors(d *fakecuda.Driver, a []byte) *deviceTensors {
	return &deviceTensors{d: d, a: a, ts: map[string]*difftest.Tensor{}}
}

// read copies the tensor whose pointer sits at byte offset off of the
// packed struct into a new host tensor, records it in ts, and returns it
// with the device bytes themselves (written back by the caller for an
// output).
func (r *deviceTensors) read(off int, name string, dt difftest.DType, shape ...int) (*difftest.Tensor, []byte, error) {
	t := difftest.MustTensor(name, dt, shape...)
	b, err := r.d.Bytes(fakecuda.Ptr(r.a, off), uint64(len(t.Data)))
	if err != nil {
		return nil, nil, err
	}
	copy(t.Data, b)
	r.ts[name] = t
	return t, b, nil
}

// readAll reads each of ins in order, stopping at the first error.
func (r *deviceTensors) readAll(ins ...devTensorAt) error {
	for _, in := range ins {
		if _, _, err := r.read(in.off, in.name, in.dt, in.shape...); err != nil {
			return err
		}
	}
	return nil
}

// reference rebuilds kernel's case from the tensors read so far and params
// JSON (the kernel's FromTensors, as a replayed capture is) and writes the
// kernel's Reference into outs, as a correct kernel would compute them.
// An error of either is the fake kernel's device-side assert
// (CUDA_ERROR_ASSERT, the error text its description).
func (r *deviceTensors) reference(kernel string, params json.RawMessage, outs ...*difftest.Tensor) error {
	k, ok := difftest.LookupKernel(kernel)
	if !ok {
		return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorAssert, Desc: kernel + " not registered"}
	}
	c, err := k.FromTensors("device", params, r.ts)
	if err == nil {
		err = k.Reference(c, outs)
	}
	if err != nil {
		return &cuda.CUDAError{Call: "kernel", Code: cuda.ErrorAssert, Desc: err.Error()}
	}
	return nil
}

// runQuickThroughHarness runs kernel's quick-suite cases through the
// harness pipeline on the fake device, once under passMode (every case
// must pass) and once under bugMode (some case must fail; bugWhat names
// the planted fault in the error when none does).
func runQuickThroughHarness(t *testing.T, kernel, passMode, bugMode, bugWhat string) {
	t.Helper()
	suite, err := suite.LoadSuiteFS(fixtures.Suites(), "quick")
	if err != nil {
		t.Fatal(err)
	}
	k, ok := difftest.LookupKernel(kernel)
	if !ok {
		t.Fatalf("%s not registered", kernel)
	}
	for _, tc := range []struct {
		mode string
		want difftest.Verdict
	}{{passMode, difftest.VerdictPass}, {bugMode, difftest.VerdictFail}} {
		t.Run(tc.mode, func(t *testing.T) {
			im, err := newImpl(time.Minute, spawnTest(tc.mode), packers())
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			ran := 0
			for i, sc := range suite.Cases {
				if sc.Spec.Kernel != kernel {
					continue
				}
				_, c, err := difftest.GenerateCase(difftest.Item{Index: i, Seed: 1, SuiteCase: sc})
				if err != nil {
					t.Fatal(err)
				}
				rec := difftest.NewRecord(c, "cuda")
				cr := difftest.CaseRun{Impl: im, Timeout: time.Minute}
				if _, err := cr.RunCase(context.Background(), k, c, rec); err != nil {
					t.Fatalf("%s: %v", c.ID, err)
				}
				ran++
				if tc.want == difftest.VerdictPass && rec.Verdict != difftest.VerdictPass {
					t.Errorf("%s: %s (%s)", c.ID, rec.Class, rec.Message)
				}
				if tc.want == difftest.VerdictFail && rec.Verdict == difftest.VerdictFail {
					t.Logf("%s caught: %s: %s", c.ID, rec.Class, rec.Message)
					return
				}
			}
			if ran == 0 {
				t.Fatalf("the quick suite has no %s case", kernel)
			}
			if tc.want == difftest.VerdictFail {
				t.Errorf("the %s passed all %d cases", bugWhat, ran)
			}
		})
	}
}
