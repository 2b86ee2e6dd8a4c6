package difftest

import (
	"encoding/hex"
	"errors"
	"math"
	"strings"
	"testing"
)

// TestTensorDigest pins Digest for small tensors. The expected values were
// computed independently with Python's hashlib over the documented
// encoding, "DTYPE[d0,d1,...]\n" followed by the little-endian bytes:
//
//	sha256(b"F32[2,3]\n" + struct.pack("<6f", 1, -2, 0.5, 0, -0.0, 3.25))
func TestTensorDigest(t *testing.T) {
	f := MustTensor("scores", F32, 2, 3)
	for i, v := range []float32{1, -2, 0.5, 0, float32(math.Copysign(0, -1)), 3.25} {
		f.SetF32(i, v)
	}
	b := MustTensor("x", BF16, 3)
	for i, v := range []uint16{0x3F80, 0xFFC0, 0x0001} {
		b.SetU16(i, v)
	}
	s := MustTensor("eps", I64)
	s.SetI64(0, -5)
	tests := []struct {
		t      *Tensor
		want   string
		reason string
	}{
		{f, "ae1f2f3ed37dd28f601cf759ff7ae33e2e0c5cb86b45d1068c17f3f46361109d", "f32 matrix with -0 (its bytes differ from +0)"},
		{b, "e16ec959be8b3d32ceccc0d44347ac142ac8cc30e4b52b796154830d34c583c2", "bf16 vector with a NaN and a subnormal"},
		{s, "41c1c281af2f387fb9f127c88808321f4e094b62da50557e0cf7a70673fbd928", "rank-0 scalar: empty shape list"},
		{MustTensor("empty", U8, 0, 4), "7758c2c812aa936854a1fab533c6929b2f43172c586e84246065d4bfc6f6eb02", "no elements: the header alone"},
	}
	for _, tc := range tests {
		d := tc.t.Digest()
		if got := hex.EncodeToString(d[:]); got != tc.want {
			t.Errorf("Digest(%s %v) = %s, want %s: %s", tc.t.DType, tc.t.Shape, got, tc.want, tc.reason)
		}
	}

	// The name is not hashed; dtype and shape are.
	g := f.Clone()
	g.Name = "other"
	if g.Digest() != f.Digest() {
		t.Error("renaming a tensor changed its digest")
	}
	g.Shape = []int{3, 2}
	if g.Digest() == f.Digest() {
		t.Error("reshaping [2,3] to [3,2] kept the digest")
	}
	h := f.Clone()
	h.DType = I32
	if h.Digest() == f.Digest() {
		t.Error("changing the dtype kept the digest")
	}
}

// TestNewTensorErrors: unknown dtypes, negative dimensions and overflowing
// shapes are errors naming the tensor; valid shapes allocate zeroed data.
func TestNewTensorErrors(t *testing.T) {
	tests := []struct {
		dtype   DType
		shape   []int
		wantErr string
		reason  string
	}{
		{"F8", []int{4}, `unknown dtype "F8"`, "dtype not in the contract list"},
		{"", []int{4}, "unknown dtype", "empty dtype"},
		{F32, []int{2, -1}, "dimension 1 is -1", "negative dimension"},
		{F64, []int{math.MaxInt / 4, 4}, "overflows", "byte count overflows int"},
		{I32, []int{1 << 40, 1 << 40}, "overflows", "element count overflows int"},
	}
	for _, tc := range tests {
		_, err := NewTensor("page_table", tc.dtype, tc.shape...)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "page_table") {
			t.Errorf("NewTensor(%q, %v) error %v, want one naming page_table and %q: %s", tc.dtype, tc.shape, err, tc.wantErr, tc.reason)
		}
	}
	okTests := []struct {
		dtype DType
		shape []int
		bytes int
	}{
		{BF16, []int{7, 128}, 7 * 128 * 2},
		{I64, nil, 8},
		{U8, []int{0, 5}, 0},
		{F32, []int{3, 0, 2}, 0},
	}
	for _, tc := range okTests {
		tt, err := NewTensor("x", tc.dtype, tc.shape...)
		if err != nil {
			t.Fatalf("NewTensor(%s, %v): %v", tc.dtype, tc.shape, err)
		}
		if len(tt.Data) != tc.bytes {
			t.Errorf("NewTensor(%s, %v) holds %d bytes, want %d", tc.dtype, tc.shape, len(tt.Data), tc.bytes)
		}
		for i, c := range tt.Data {
			if c != 0 {
				t.Fatalf("NewTensor data[%d] = %d, want zero-filled", i, c)
			}
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MustTensor with a negative dimension did not panic")
			}
		}()
		MustTensor("x", F32, -1)
	}()
}

// TestCheckLayout: each broken rule is an *InputError naming the tensor,
// wrapping ErrInvalidInput.
func TestCheckLayout(t *testing.T) {
	good := MustTensor("seq_lens", I32, 4)
	short := MustTensor("seq_lens", I32, 4)
	short.Data = short.Data[:15]
	tests := []struct {
		t       *Tensor
		dtype   DType
		rank    int
		wantErr string
		reason  string
	}{
		{good, I32, 1, "", "matches"},
		{good, I32, -1, "", "any rank"},
		{good, I64, 1, "dtype must be I64, got I32", "wrong dtype"},
		{good, I32, 2, "rank must be 2, got shape [4]", "wrong rank"},
		{short, I32, 1, "holds 15 bytes, shape [4] of I32 needs 16", "data shorter than the shape"},
	}
	for _, tc := range tests {
		err := tc.t.CheckLayout(tc.dtype, tc.rank)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("CheckLayout(%s, %d) = %v, want nil: %s", tc.dtype, tc.rank, err, tc.reason)
			}
			continue
		}
		var ie *InputError
		if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidInput) {
			t.Errorf("CheckLayout(%s, %d) = %v, want an *InputError wrapping ErrInvalidInput: %s", tc.dtype, tc.rank, err, tc.reason)
			continue
		}
		if ie.Tensor != "seq_lens" || !strings.Contains(ie.Rule, tc.wantErr) {
			t.Errorf("CheckLayout(%s, %d) = %+v, want tensor seq_lens and rule %q: %s", tc.dtype, tc.rank, ie, tc.wantErr, tc.reason)
		}
	}
}

// TestTensorAccessors: every setter and getter round-trips, writes
// little-endian bytes at the element's offset, and Strides are row-major.
func TestTensorAccessors(t *testing.T) {
	f := MustTensor("scores", F32, 2, 2)
	f.SetF32(1, -1.5)
	if got := f.F32(1); got != -1.5 {
		t.Errorf("F32 round trip = %v", got)
	}
	if got := f.Data[4:8]; string(got) != "\x00\x00\xc0\xbf" {
		t.Errorf("SetF32(1, -1.5) bytes % x, want 00 00 c0 bf", got)
	}
	f.SetU32(3, 0x7FC00001)
	if got := f.U32(3); got != 0x7FC00001 {
		t.Errorf("U32 round trip = %08x (NaN payloads must survive)", got)
	}

	i32 := MustTensor("seq_lens", I32, 3)
	i32.SetI32(2, -7)
	if got := i32.I32(2); got != -7 {
		t.Errorf("I32 round trip = %d", got)
	}
	if got := i32.U32(2); got != 0xFFFFFFF9 {
		t.Errorf("I32 -7 bits = %08x, want two's complement fffffff9", got)
	}

	i64 := MustTensor("out_loc", I64, 2)
	i64.SetI64(1, -1)
	i64.SetI64(0, 1<<40+3)
	if i64.I64(1) != -1 || i64.I64(0) != 1<<40+3 {
		t.Errorf("I64 round trip = %d, %d", i64.I64(0), i64.I64(1))
	}
	if i64.Data[0] != 3 || i64.Data[5] != 1 {
		t.Errorf("SetI64(0, 2^40+3) bytes % x, want little-endian", i64.Data[:8])
	}

	bf := MustTensor("x", BF16, 2)
	bf.SetU16(1, 0xBF80)
	if got := bf.U16(1); got != 0xBF80 || bf.Data[2] != 0x80 || bf.Data[3] != 0xBF {
		t.Errorf("U16 round trip = %04x, bytes % x", got, bf.Data)
	}

	tests := []struct {
		shape []int
		want  []int
	}{
		{[]int{2, 3, 4}, []int{12, 4, 1}},
		{[]int{5}, []int{1}},
		{nil, []int{}},
		{[]int{3, 0, 2}, []int{0, 2, 1}},
	}
	for _, tc := range tests {
		got := MustTensor("t", U8, tc.shape...).Strides()
		if len(got) != len(tc.want) {
			t.Errorf("Strides(%v) = %v, want %v", tc.shape, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Strides(%v) = %v, want %v", tc.shape, got, tc.want)
				break
			}
		}
	}

	c := f.Clone()
	c.Data[0] ^= 0xFF
	c.Shape[0] = 9
	if f.Data[0] == c.Data[0] || f.Shape[0] == 9 {
		t.Error("Clone shares data or shape with the original")
	}
}
