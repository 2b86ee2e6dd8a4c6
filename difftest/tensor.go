package difftest

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DType names an element type. The spellings are those of the safetensors
// header ("F32", "I32", ...), so a Tensor's dtype travels unchanged through
// the exec protocol and capture files (docs/interfaces.md).
type DType string

// The element types used by the kernel contracts of docs/contracts/topk_transform.md and docs/contracts/norm_rope_store.md.
const (
	F32  DType = "F32"  // IEEE 754 binary32, little-endian
	F64  DType = "F64"  // IEEE 754 binary64, little-endian
	I32  DType = "I32"  // two's-complement int32, little-endian
	I64  DType = "I64"  // two's-complement int64, little-endian
	BF16 DType = "BF16" // bfloat16 bit patterns (top half of binary32), little-endian
	F16  DType = "F16"  // IEEE 754 binary16 bit patterns, little-endian
	U8   DType = "U8"   // raw bytes (paged caches: FP8 codes and scales, BF16 rows)
)

// Size returns the element size in bytes, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case F64, I64:
		return 8
	case BF16, F16:
		return 2
	case U8:
		return 1
	}
	return 0
}

// Tensor is a dense little-endian tensor: a dtype, a shape, row-major
// strides and the raw bytes. Data always holds exactly NumElements·Size
// bytes; kernels that take a row stride (scores [B, stride], x [N, stride])
// express it through the shape's last dimension.
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
}

// NewTensor allocates a zero-filled tensor. It returns an error for an
// unknown dtype or a negative dimension.
func NewTensor(name string, dtype DType, shape ...int) (*Tensor, error) {
	if dtype.Size() == 0 {
		return nil, fmt.Errorf("tensor %s: unknown dtype %q", name, dtype)
	}
	n := 1
	for i, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("tensor %s: dimension %d is %d, must be ≥ 0", name, i, d)
		}
		if d != 0 && n > math.MaxInt/d/dtype.Size() {
			return nil, fmt.Errorf("tensor %s: shape %v overflows", name, shape)
		}
		n *= d
	}
	return &Tensor{Name: name, DType: dtype, Shape: append([]int(nil), shape...), Data: make([]byte, n*dtype.Size())}, nil
}

// MustTensor is NewTensor for shapes known to be valid (generators and
// tests); it panics on an invalid dtype or shape.
func MustTensor(name string, dtype DType, shape ...int) *Tensor {
	t, err := NewTensor(name, dtype, shape...)
	if err != nil {
		panic(err)
	}
	return t
}

// Len returns the number of elements (the product of the shape).
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Strides returns the row-major strides in elements.
func (t *Tensor) Strides() []int {
	s := make([]int, len(t.Shape))
	acc := 1
	for i := len(t.Shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= t.Shape[i]
	}
	return s
}

// CheckLayout reports whether Data's length matches dtype and shape, and
// whether the dtype and rank are the expected ones (rank < 0 accepts any).
// The error names the tensor and the rule.
func (t *Tensor) CheckLayout(dtype DType, rank int) error {
	if t.DType != dtype {
		return &InputError{Tensor: t.Name, Rule: fmt.Sprintf("dtype must be %s, got %s", dtype, t.DType)}
	}
	if rank >= 0 && len(t.Shape) != rank {
		return &InputError{Tensor: t.Name, Rule: fmt.Sprintf("rank must be %d, got shape %v", rank, t.Shape)}
	}
	if len(t.Data) != t.Len()*t.DType.Size() {
		return &InputError{Tensor: t.Name, Rule: fmt.Sprintf("holds %d bytes, shape %v of %s needs %d", len(t.Data), t.Shape, t.DType, t.Len()*t.DType.Size())}
	}
	return nil
}

// CheckShape reports whether the tensor has exactly the given dtype and
// shape, without looking at Data: a kernel's FromTensors sees a capture's
// tensors as its header declares them, before any byte is read. The error
// is an *InputError naming the tensor and the rule.
func (t *Tensor) CheckShape(dtype DType, shape ...int) error {
	if t.DType != dtype {
		return &InputError{Tensor: t.Name, Rule: fmt.Sprintf("dtype must be %s, got %s", dtype, t.DType)}
	}
	if !slices.Equal(t.Shape, shape) {
		return &InputError{Tensor: t.Name, Rule: fmt.Sprintf("shape must be %v, got %v", shape, t.Shape)}
	}
	return nil
}

// Clone returns a deep copy.
func (t *Tensor) Clone() *Tensor {
	return &Tensor{Name: t.Name, DType: t.DType, Shape: append([]int(nil), t.Shape...), Data: append([]byte(nil), t.Data...)}
}

// Digest returns the SHA-256 of the tensor's dtype, shape and bytes:
// "DTYPE[d0,d1,...]\n" followed by Data. Two tensors with equal digests are
// byte-identical inputs.
func (t *Tensor) Digest() [32]byte {
	h := sha256.New()
	h.Write([]byte(t.header()))
	h.Write(t.Data)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func (t *Tensor) header() string {
	parts := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		parts[i] = strconv.Itoa(d)
	}
	return string(t.DType) + "[" + strings.Join(parts, ",") + "]\n"
}

// Element accessors. Index i is a flat row-major element index; they
// panic on an out-of-range index like a slice access does.

// F32 returns element i of an F32 tensor.
func (t *Tensor) F32(i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
}

// SetF32 stores v at element i of an F32 tensor.
func (t *Tensor) SetF32(i int, v float32) {
	binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(v))
}

// U32 returns the raw bits of 4-byte element i (F32 or I32).
func (t *Tensor) U32(i int) uint32 { return binary.LittleEndian.Uint32(t.Data[4*i:]) }

// SetU32 stores raw bits at 4-byte element i (F32 or I32).
func (t *Tensor) SetU32(i int, v uint32) { binary.LittleEndian.PutUint32(t.Data[4*i:], v) }

// I32 returns element i of an I32 tensor.
func (t *Tensor) I32(i int) int32 { return int32(binary.LittleEndian.Uint32(t.Data[4*i:])) }

// SetI32 stores v at element i of an I32 tensor.
func (t *Tensor) SetI32(i int, v int32) { binary.LittleEndian.PutUint32(t.Data[4*i:], uint32(v)) }

// I64 returns element i of an I64 tensor.
func (t *Tensor) I64(i int) int64 { return int64(binary.LittleEndian.Uint64(t.Data[8*i:])) }

// SetI64 stores v at element i of an I64 tensor.
func (t *Tensor) SetI64(i int, v int64) { binary.LittleEndian.PutUint64(t.Data[8*i:], uint64(v)) }

// U16 returns the bits of 2-byte element i (BF16 or F16).
func (t *Tensor) U16(i int) uint16 { return binary.LittleEndian.Uint16(t.Data[2*i:]) }

// SetU16 stores bits at 2-byte element i (BF16 or F16).
func (t *Tensor) SetU16(i int, v uint16) { binary.LittleEndian.PutUint16(t.Data[2*i:], v) }
