// The Go reference of norm_rope_store (docs/contracts/norm_rope_store.md): per token, in f64
// from the exact inputs, norm → RoPE → Hadamard, rounded once at the
// output into the paged cache.

package normrope

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// tokenZ computes token t's pre-store vector z in f64 (norm, RoPE on
// [rope_offset, +64) with freqs row positions[t], then the Hadamard when
// enabled). It returns the norm factor r = 1/sqrt(v + eps) too. With
// stages "store" z is token t's x, exactly, and r is 1.
func (in *inputs) tokenZ(t int, z *[Dim]float64) (r float64) {
	if in.p.Stages == StagesStore {
		in.row(t, z)
		return 1
	}
	var x [Dim]float64
	in.row(t, &x)
	r = normF64(in.p.Norm, &x, &in.w, &in.b, float64(in.p.Eps), z)
	ropeF64(in.p.RopeStyle, in.p.RopeOffset, in.cosSin(in.pos.I64(t)), z)
	if in.p.Hadamard {
		hadamardF64(z)
	}
	return r
}

// Compute runs the reference on a case: for every token t with
// out_loc[t] ≥ 0 it writes slot out_loc[t] of cache (FP8: 128 codes and a
// scale; BF16: 128 values; FP4: 64 bytes of packed codes and 4 block
// scales) and nothing else; tokens with out_loc −1 are
// skipped, and every other byte of cache keeps its prior value (the
// canary). cache must be the u8 [num_pages, page_bytes] output. It returns
// the case's *InputError if the case breaks the contract. Tokens are
// processed in parallel when N ≥ 256 (each owns a distinct slot).
func Compute(c *difftest.Case, cache *difftest.Tensor) error {
	in, err := load(c)
	if err != nil {
		return err
	}
	if err := checkCache(in.p, cache); err != nil {
		return err
	}
	forTokens(in.n, func(lo, hi int) {
		var z [Dim]float64
		for t := lo; t < hi; t++ {
			slot := in.loc.I64(t)
			if slot < 0 {
				continue
			}
			in.tokenZ(t, &z)
			switch in.p.Store {
			case StoreBF16:
				storeBF16(in.p, cache.Data, int(slot), &z)
			case StoreFP4:
				storeFP4(in.p, cache.Data, int(slot), &z)
			default:
				storeFP8(in.p, cache.Data, int(slot), &z)
			}
		}
	})
	return nil
}

// checkCache verifies an output buffer against the configuration.
func checkCache(p Params, cache *difftest.Tensor) error {
	if cache == nil {
		return fmt.Errorf("norm_rope_store: no %s output", NameCache)
	}
	want := p.NumPages * p.PageBytes()
	if len(cache.Data) != want {
		return difftest.Inputf(NameCache, nil, "holds %d bytes, num_pages·page_bytes = %d·%d = %d", len(cache.Data), p.NumPages, p.PageBytes(), want)
	}
	return nil
}

// forTokens calls f on contiguous token ranges covering [0, n), in
// parallel over GOMAXPROCS goroutines when n ≥ 256.
func forTokens(n int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 256 || workers < 2 {
		f(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}

// ExactKeys returns every token's key before the store, z in f64 (the
// norm, RoPE and Hadamard of docs/contracts/norm_rope_store.md steps 1–3 from the exact
// inputs): what Compute rounds into the cache, unquantised. The exact
// pipeline of docs/pipeline.md scores these. Token t's key is element t,
// whatever its out_loc; NaN/inf inputs give NaN/inf keys. It returns the
// case's *InputError if the case breaks the contract.
func ExactKeys(c *difftest.Case) ([][Dim]float64, error) {
	in, err := load(c)
	if err != nil {
		return nil, err
	}
	z := make([][Dim]float64, in.n)
	forTokens(in.n, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			in.tokenZ(t, &z[t])
		}
	})
	return z, nil
}
