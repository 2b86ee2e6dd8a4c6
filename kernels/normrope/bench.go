// The least memory traffic of norm_rope_store, for difftest bench's
// bandwidth floor (docs/nightly.md).

package normrope

import (
	"github.com/kerneldiff/kerneldiff/difftest"
)

// MinBytes implements bench.TrafficModel: the bytes any correct
// kernel must move for case c. It reads every out_loc (8 per token); for
// each token it writes (out_loc ≥ 0), its x row (2·128), its position (8)
// and then stores its slot (132 bytes for FP8: 128 codes and an f32
// scale; 256 for BF16); it reads the freqs row (64 f32, 256 bytes) of
// each distinct position among those tokens once, and the norm weight
// (512) and, for LayerNorm, the bias (512) once. Tokens that are not
// written need only their out_loc. A case whose params do not decode
// counts 0.
func (Kernel) MinBytes(c *difftest.Case) int64 {
	p, err := paramsOf(c)
	loc, pos := c.Input(NameOutLoc), c.Input(NamePositions)
	if err != nil || loc == nil || pos == nil || pos.Len() != loc.Len() {
		return 0
	}
	store := int64(Dim + 4)
	switch p.Store {
	case StoreBF16:
		store = 2 * Dim
	case StoreFP4:
		store = Dim/2 + fp4Blocks
	}
	n := int64(8*loc.Len()) + 4*Dim
	if p.Norm == "layer" {
		n += 4 * Dim
	}
	seen := map[int64]bool{}
	for t := 0; t < loc.Len(); t++ {
		if loc.I64(t) < 0 {
			continue
		}
		n += 2*Dim + 8 + store
		if q := pos.I64(t); !seen[q] {
			seen[q] = true
			n += 4 * 64
		}
	}
	return n
}
