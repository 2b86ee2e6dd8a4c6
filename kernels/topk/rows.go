// Row access shared by the reference, the checker and the mutants: key32
// conversion of a score row, the page-table slot map of docs/contracts/topk_transform.md, and a
// row-parallel driver.

package topk

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// view is a validated case unpacked for row access.
type view struct {
	p      *Params
	scores *difftest.Tensor
	lens   *difftest.Tensor
	table  *difftest.Tensor
	shift  uint
}

// newView validates c and unpacks it.
func newView(c *difftest.Case) (*view, error) {
	if err := Validate(c); err != nil {
		return nil, err
	}
	p, _ := paramsOf(c)
	scores, lens, table, _ := inputsOf(c)
	return &view{p: p, scores: scores, lens: lens, table: table, shift: p.log2P()}, nil
}

// length returns seq_lens[b].
func (v *view) length(b int) int { return int(v.lens.I32(b)) }

// bits returns the f32 bits of scores[b][i]; for 16-bit scores the exact
// widening of the bf16 or f16 score (widen16: NaNs keep sign and
// payload), so every f32 rule that reads bits (NaN and −inf tests, the
// shrinker, literal entries) reads 16-bit scores unchanged.
func (v *view) bits(b, i int) uint32 {
	if v.p.wide16() {
		return widen16(v.p.ScoreDType, v.scores.U16(b*v.p.Stride+i))
	}
	return v.scores.U32(b*v.p.Stride + i)
}

// keys fills dst[:n] with key32 of scores[b][0:n] (for 16-bit scores
// key32 of the exact widening, whose order is Key16's: keys16) and
// returns it; n may run past seq_lens[b] up to the stride (only mutants
// do that).
func (v *view) keys(b, n int, dst []uint32) []uint32 {
	dst = grow(dst, n)
	if v.p.wide16() {
		return v.keys16(b, dst)
	}
	row := v.scores.Data[4*b*v.p.Stride:]
	for i := range dst {
		dst[i] = numeric.Key32(binary.LittleEndian.Uint32(row[4*i:]))
	}
	return dst
}

// slot returns the slot of row-relative position i of row b through page
// table row tb: page_table[tb][i >> log2 P]·P + (i & (P−1)), in 64-bit.
// Validate guarantees it fits in int32 for i < seq_lens[tb].
func (v *view) slot(tb, i int) int64 {
	page := int64(v.table.I32(tb*v.p.MaxPages + i>>v.shift))
	return page<<v.shift | int64(i&(v.p.P-1))
}

// grow returns s resized to n, reusing its storage when large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// parallelRows calls fn(s, b) for every row b in [0, batch), spread over
// runtime.GOMAXPROCS(0) goroutines; each goroutine owns one zero-valued S
// (its scratch memory), passed to every call it makes. It returns the
// error of the lowest failing row, so the result does not depend on
// scheduling.
func parallelRows[S any](batch int, fn func(s *S, b int) error) error {
	workers := min(runtime.GOMAXPROCS(0), batch)
	if workers <= 1 {
		var s S
		for b := 0; b < batch; b++ {
			if err := fn(&s, b); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, batch)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			var s S
			for {
				b := int(next.Add(1) - 1)
				if b >= batch {
					return
				}
				errs[b] = fn(&s, b)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// outputs returns page_indices and raw_indices (nil when not returned)
// from outs, checking that they match the case's output specs.
func outputs(c *difftest.Case, p *Params, outs []*difftest.Tensor) (page, raw *difftest.Tensor, err error) {
	want := p.Outputs()
	if len(outs) != len(want) {
		return nil, nil, difftest.Inputf("outputs", nil, "got %d tensors, the case has %d", len(outs), len(want))
	}
	for i, w := range want {
		t := outs[i]
		if t == nil || len(t.Data) != w.Bytes() {
			return nil, nil, difftest.Inputf(w.Name, nil, "output buffer must hold %d bytes (%s %v)", w.Bytes(), w.DType, w.Shape)
		}
	}
	page = outs[0]
	if p.ReturnRaw {
		raw = outs[1]
	}
	return page, raw, nil
}
