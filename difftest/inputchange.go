package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// InputChange describes how an input tensor's bytes differ after a run
// from the bytes the implementation was given: the first changed element
// by its row-major index (not its byte), its value before and after, and
// how many elements changed. Every device path (the worker's read-back of
// the device copies, the serve program's shared memory) reports an
// input-modified failure with it, so the message names the same element
// whichever path found it.
type InputChange struct {
	Tensor  string // the input's contract name ("scores")
	Index   []int  // the first changed element's index, one entry per dimension
	Flat    int    // the same element as a flat row-major index
	Before  string // its value as given ("0x3f800000 (1)")
	After   string // its value after the run
	Changed int    // elements that differ, ≥ 1
	Total   int    // elements in the tensor
}

// DiffInput compares an input's bytes as given (t.Data) with after, the
// same tensor's bytes read back after the run, and returns the change, or
// nil when they are equal. A length mismatch is reported as a change of
// the first element past the shorter one. Elements are t.DType.Size()
// bytes; a tensor of an unknown dtype is compared byte by byte.
func DiffInput(t *Tensor, after []byte) *InputChange {
	if bytes.Equal(t.Data, after) {
		return nil // the common case, at memcmp speed
	}
	size := t.DType.Size()
	if size == 0 {
		size = 1
	}
	n := min(len(t.Data), len(after))
	first, changed := -1, 0
	for e := 0; e*size < n; e++ {
		lo, hi := e*size, min((e+1)*size, n)
		if string(t.Data[lo:hi]) != string(after[lo:hi]) {
			if first < 0 {
				first = e
			}
			changed++
		}
	}
	total := len(t.Data) / size
	if len(t.Data) != len(after) {
		if first < 0 {
			first = n / size
		}
		changed += max(len(t.Data), len(after))/size - n/size
	}
	if first < 0 {
		return nil
	}
	return &InputChange{
		Tensor:  t.Name,
		Index:   unravel(first, t.Shape),
		Flat:    first,
		Before:  elementString(t.DType, t.Data, first, size),
		After:   elementString(t.DType, after, first, size),
		Changed: changed,
		Total:   total,
	}
}

// Element returns the index as written in messages: "scores[2][17]".
func (c *InputChange) Element() string {
	s := c.Tensor
	for _, i := range c.Index {
		s += "[" + strconv.Itoa(i) + "]"
	}
	return s
}

// String returns the message of an input-modified failure:
//
//	input scores changed during the run: scores[0][3] was 0x3f800000 (1), now 0xbf800000 (-1); 1 of 4096 elements changed
func (c *InputChange) String() string {
	return fmt.Sprintf("input %s changed during the run: %s was %s, now %s; %d of %d elements changed",
		c.Tensor, c.Element(), c.Before, c.After, c.Changed, c.Total)
}

// unravel turns flat row-major element index i into one index per
// dimension of shape; an index past the end (a length mismatch) keeps
// the overflow in the first dimension.
func unravel(i int, shape []int) []int {
	if len(shape) == 0 {
		return nil
	}
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d > 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	idx[0] = i
	return idx
}

// elementString formats element e (size bytes) of b as its bits in hex
// and, for the numeric dtypes, its value: "0x3f800000 (1)", "0x00000007
// (7)"; "absent" past the end of b.
func elementString(d DType, b []byte, e, size int) string {
	lo := e * size
	if lo+size > len(b) {
		return "absent"
	}
	w := b[lo : lo+size]
	switch d {
	case F32:
		u := binary.LittleEndian.Uint32(w)
		return fmt.Sprintf("0x%08x (%s)", u, strconv.FormatFloat(float64(math.Float32frombits(u)), 'g', -1, 32))
	case F64:
		u := binary.LittleEndian.Uint64(w)
		return fmt.Sprintf("0x%016x (%s)", u, strconv.FormatFloat(math.Float64frombits(u), 'g', -1, 64))
	case I32:
		u := binary.LittleEndian.Uint32(w)
		return fmt.Sprintf("0x%08x (%d)", u, int32(u))
	case I64:
		u := binary.LittleEndian.Uint64(w)
		return fmt.Sprintf("0x%016x (%d)", u, int64(u))
	case BF16:
		u := binary.LittleEndian.Uint16(w)
		return fmt.Sprintf("0x%04x (%s)", u, strconv.FormatFloat(float64(numeric.BF16ToF32(u)), 'g', -1, 32))
	case F16:
		u := binary.LittleEndian.Uint16(w)
		return fmt.Sprintf("0x%04x (%s)", u, strconv.FormatFloat(float64(numeric.F16ToF32(u)), 'g', -1, 32))
	}
	s := "0x"
	for _, c := range w {
		s += fmt.Sprintf("%02x", c)
	}
	return s
}
