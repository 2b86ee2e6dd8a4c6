// Guard bands and poison fills (docs/running.md steps 2–4).
//
// Every output an implementation receives lives inside a larger allocation
// with GuardBytes of poison on both sides. Output and guards are filled with
// one of two byte patterns, PoisonA and PoisonB, that are never zero, so a
// kernel that writes zeros, or writes nothing, is told apart from one that
// computes. A byte the contract says is written that still equals PoisonA
// after the run with PoisonA and PoisonB after the run with PoisonB was not
// written (a value that merely happens to equal one poison cannot equal
// both, since the two runs must agree).
package difftest

import "fmt"

// GuardBytes is the size of the poison band on each side of an output
// buffer: 4 KiB, one host page, large enough to catch an off-by-one-row
// store of any output in the two contracts (a row is at most 2048·4 bytes
// of page_indices, a cache page slot 256 bytes).
const GuardBytes = 4096

// Poison is a fill byte for outputs and guard bands.
type Poison byte

// The two poisons. 0xA5 and 0x5A differ in every bit, are never zero, and
// read as unremarkable finite values in every output dtype (an f32 of
// 0xA5A5A5A5 is −2.87e−16, an e4m3fn code 0xA5 is −0.0137), so no dtype
// decodes them as a sentinel a kernel might produce on purpose.
const (
	PoisonA Poison = 0xA5
	PoisonB Poison = 0x5A
)

// NewBuffer allocates the output o with GuardBytes of guard on both sides
// and fills output and guards with p. Tensor.Data is the window
// Full[GuardBytes : GuardBytes+o.Bytes()], capacity-limited so that an
// append cannot spill into the guard.
func NewBuffer(o OutputSpec, p Poison) *Buffer {
	n := o.Bytes()
	full := make([]byte, n+2*GuardBytes)
	fill(full, p)
	return &Buffer{
		Tensor: &Tensor{Name: o.Name, DType: o.DType, Shape: append([]int(nil), o.Shape...), Data: full[GuardBytes : GuardBytes+n : GuardBytes+n]},
		Full:   full,
		Guard:  GuardBytes,
	}
}

// NewBuffers allocates every output of c with NewBuffer.
func NewBuffers(c *Case, p Poison) []*Buffer {
	bufs := make([]*Buffer, len(c.Outputs))
	for i, o := range c.Outputs {
		bufs[i] = NewBuffer(o, p)
	}
	return bufs
}

// PoisonedTensors allocates every output of c as a plain tensor filled
// with p (the reference's outputs, and the canary state of InOut outputs).
func PoisonedTensors(c *Case, p Poison) []*Tensor {
	ts := make([]*Tensor, len(c.Outputs))
	for i, o := range c.Outputs {
		t := &Tensor{Name: o.Name, DType: o.DType, Shape: append([]int(nil), o.Shape...), Data: make([]byte, o.Bytes())}
		fill(t.Data, p)
		ts[i] = t
	}
	return ts
}

func fill(b []byte, p Poison) {
	for i := range b {
		b[i] = byte(p)
	}
}

// TensorsOf returns the output tensor of each buffer (the middle, between
// its guards), in order.
func TensorsOf(bufs []*Buffer) []*Tensor {
	ts := make([]*Tensor, len(bufs))
	for i, b := range bufs {
		ts[i] = b.Tensor
	}
	return ts
}

// CheckGuards reports the first guard byte of any buffer that no longer
// equals p, as "page_indices: guard byte 3 after the end changed (0x00,
// want 0xa5)".
func CheckGuards(bufs []*Buffer, p Poison) error {
	for _, b := range bufs {
		n := len(b.Full) - 2*b.Guard
		for i := 0; i < b.Guard; i++ {
			if b.Full[i] != byte(p) {
				return fmt.Errorf("%s: guard byte %d before the start changed (0x%02x, want 0x%02x)", b.Name, b.Guard-i, b.Full[i], byte(p))
			}
		}
		for i := b.Guard + n; i < len(b.Full); i++ {
			if b.Full[i] != byte(p) {
				return fmt.Errorf("%s: guard byte %d after the end changed (0x%02x, want 0x%02x)", b.Name, i-b.Guard-n, b.Full[i], byte(p))
			}
		}
	}
	return nil
}

// Complement returns the byte ranges of [0, n) not covered by rs. rs may
// be unsorted and overlapping; out-of-range parts are an error (a kernel
// contract bug, not an implementation fault).
func Complement(name string, n int, rs []Range) ([]Range, error) {
	covered := make([]bool, n)
	for _, r := range rs {
		if r.Off < 0 || r.Len < 0 || r.Off+r.Len > n {
			return nil, fmt.Errorf("%s: written range [%d, %d) outside the %d-byte output", name, r.Off, r.Off+r.Len, n)
		}
		for i := r.Off; i < r.Off+r.Len; i++ {
			covered[i] = true
		}
	}
	var out []Range
	for i := 0; i < n; {
		if covered[i] {
			i++
			continue
		}
		j := i
		for j < n && !covered[j] {
			j++
		}
		out = append(out, Range{Off: i, Len: j - i})
		i = j
	}
	return out, nil
}

// Untouched returns, per output of c, the byte ranges k's contract writes
// (Kernel.Written) and the ranges an implementation must leave as they
// are: the complement of the written ranges and of those it may write
// (Unspecifier.Unspecified). The runner checks the untouched ranges after
// every run (CheckCanary). Errors, a kernel contract bug: a list whose
// length is not the number of outputs, a range outside its output.
func Untouched(k Kernel, c *Case) (written, untouched [][]Range, err error) {
	written = k.Written(c)
	if len(written) != len(c.Outputs) {
		return nil, nil, fmt.Errorf("Written lists %d outputs, the case has %d", len(written), len(c.Outputs))
	}
	var unspecified [][]Range
	if us, ok := k.(Unspecifier); ok {
		if unspecified = us.Unspecified(c); unspecified != nil && len(unspecified) != len(c.Outputs) {
			return nil, nil, fmt.Errorf("Unspecified lists %d outputs, the case has %d", len(unspecified), len(c.Outputs))
		}
	}
	untouched = make([][]Range, len(c.Outputs))
	for i, o := range c.Outputs {
		owned := written[i]
		if unspecified != nil {
			owned = append(append([]Range(nil), written[i]...), unspecified[i]...)
		}
		if untouched[i], err = Complement(o.Name, o.Bytes(), owned); err != nil {
			return nil, nil, err
		}
	}
	return written, untouched, nil
}

// CheckCanary reports the first byte outside the written ranges that no
// longer equals p: an implementation wrote a byte it does not own.
func CheckCanary(outs []*Tensor, untouched [][]Range, p Poison) error {
	for k, t := range outs {
		for _, r := range untouched[k] {
			for i := r.Off; i < r.Off+r.Len; i++ {
				if t.Data[i] != byte(p) {
					return fmt.Errorf("%s: byte %d is outside what the contract writes but changed (0x%02x, want canary 0x%02x)", t.Name, i, t.Data[i], byte(p))
				}
			}
		}
	}
	return nil
}

// checkUnwritten reports the written ranges' bytes that kept the poison in
// both runs: PoisonA in a and PoisonB in b. It returns the count and the
// first such byte.
func checkUnwritten(a, b []*Tensor, written [][]Range) (count int, first string) {
	for k := range a {
		for _, r := range written[k] {
			for i := r.Off; i < r.Off+r.Len; i++ {
				if a[k].Data[i] == byte(PoisonA) && b[k].Data[i] == byte(PoisonB) {
					if count == 0 {
						first = fmt.Sprintf("%s: byte %d (element %d) kept the poison in both runs", a[k].Name, i, i/max(1, a[k].DType.Size()))
					}
					count++
				}
			}
		}
	}
	return count, first
}
