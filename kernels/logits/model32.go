// A binary32 model of an indexer_logits kernel: the contract's formula
// evaluated in float32 with every rounding explicit, as a CUDA kernel does
// (docs/contracts/indexer_logits.md: "the kernel may sum in any order with f32 accumulation,
// with or without FMA"). The mutant catalog is built on it (each fault
// switched on alone), and the tests run its fault-free variants — other
// summation orders over dims and heads, FMA on and off, the scale
// multiplied at other points — through Check to show the tolerance
// absorbs rounding and nothing more.

package logits

import (
	"encoding/binary"
	"math"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
)

// Orders both sums of products have (sum32).
const (
	orderSeq  = ""     // i = 0, 1, …, one accumulator
	orderRev  = "rev"  // i descending
	orderTree = "tree" // the products, then a pairwise (tree) sum
)

// Orders of the 128-term dot product (sim32.dims).
const (
	dimsSeq    = orderSeq  // d = 0, 1, …, 127, one accumulator
	dimsRev    = orderRev  // d = 127, …, 0
	dimsTree   = orderTree // the 128 products, then a pairwise (tree) sum, as warp shuffles form it
	dimsChunk4 = "chunk4"  // four accumulators (d mod 4, as the k-steps of an MMA tile), then (c0 + c1) + (c2 + c3)
)

// Orders of the head sum (sim32.heads).
const (
	headsSeq    = orderSeq  // h = 0, 1, …, H−1
	headsRev    = orderRev  // h = H−1, …, 0
	headsTree   = orderTree // the H terms, then a pairwise sum
	headsSplit4 = "split4"  // heads h ≡ g (mod 4) summed per g ascending, then ((p0 + p1) + p2) + p3: logits.cu's order
)

// Points where the FP8 scale is multiplied in (sim32.scaleAt).
const (
	scaleEnd  = ""     // logit = S·s
	scaleHead = "head" // each term (w_h·s)·r_h
	scaleKey  = "key"  // into the key before the dot products: k'_d = s·k_d
)

// GridCapPages is the page count past which the logits-grid-cap mutant
// (and the LOGITS_GRID_CAP fault build) scores nothing: a grid sized for
// 2048 pages, 131,072 keys at P = 64.
const GridCapPages = 2048

// sim32 selects one binary32 kernel variant. The zero value is a plain
// kernel: sequential dot products with multiply and add rounded apart,
// heads in order, the scale at the end.
type sim32 struct {
	dims    string
	fma     bool // fused multiply-add in the dot products and the head sum
	heads   string
	scaleAt string
	fault   string // a mutant name of mutants.go, or ""
}

// cudaOrder is logits.cu's evaluation order: sequential FMA dot products,
// heads split over four thread groups, the scale at the end.
var cudaOrder = sim32{fma: true, heads: headsSplit4}

// fma32 returns a·b + c rounded once to binary32 (IEEE fusedMultiplyAdd):
// a·b is exact in f64; the sum is split exactly (TwoSum) into hi + lo and
// rounded to f32 from hi, corrected by lo's sign when hi lies on an f32
// rounding midpoint.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	if float64(float32(p)) == p {
		// a·b is an f32 value: the sum of two f32 values rounded to f64
		// and then to f32 is correctly rounded (53 ≥ 2·24 + 2: S. A.
		// Figueroa, "When is double rounding innocuous?", SIGNUM 1995).
		return float32(p + cc)
	}
	hi := p + cc
	bv := hi - p
	lo := (p - (hi - bv)) + (cc - bv)
	r := float32(hi)
	if lo == 0 || math.IsInf(hi, 0) || math.IsNaN(hi) {
		return r
	}
	// Neighbours of r; hi is a midpoint when it lies halfway between r and one of them.
	for _, n := range []float32{math.Nextafter32(r, float32(math.Inf(1))), math.Nextafter32(r, float32(math.Inf(-1)))} {
		mid := (float64(r) + float64(n)) / 2 // exact: f32 neighbours' mean fits f64
		if mid != hi {
			continue
		}
		// hi rounded to r (ties to even); the exact value lies on lo's side of hi.
		if (lo > 0) == (float64(n) > hi) {
			return n
		}
		return r
	}
	return r
}

// madd returns a·b + c in binary32, fused or with two roundings.
func (s sim32) madd(a, b, c float32) float32 {
	if s.fma {
		return fma32(a, b, c)
	}
	return float32(float32(a*b) + c)
}

// tree32 sums v pairwise in binary32.
func tree32(v []float32) float32 {
	if len(v) == 1 {
		return v[0]
	}
	h := (len(v) + 1) / 2
	return float32(tree32(v[:h]) + tree32(v[h:]))
}

// dot returns Σ q_d·k_d in the variant's order.
func (s sim32) dot(q, k *[Dim]float32) float32 {
	if s.dims == dimsChunk4 {
		var c [4]float32
		for d := 0; d < Dim; d++ {
			c[d%4] = s.madd(q[d], k[d], c[d%4])
		}
		return float32(float32(c[0]+c[1]) + float32(c[2]+c[3]))
	}
	return s.sum32(s.dims, q[:], k[:])
}

// relu returns max(d, 0) as CUDA's fmaxf does (a NaN gives the other
// operand, 0), or d itself for the logits-no-relu fault.
func (s sim32) relu(d float32) float32 {
	if s.fault == "logits-no-relu" {
		return d
	}
	if !(d > 0) {
		return 0
	}
	return d
}

// headSum32 returns Σ_h w_h·r_h in the variant's order.
func (s sim32) headSum32(w, r []float32) float32 {
	if s.heads == headsSplit4 {
		H := len(w)
		var p [4]float32
		for g := 0; g < 4; g++ {
			for h := g; h < H; h += 4 {
				p[g] = s.madd(w[h], r[h], p[g])
			}
		}
		return float32(float32(float32(p[0]+p[1])+p[2]) + p[3])
	}
	return s.sum32(s.heads, w, r)
}

// sum32 returns Σ a_i·b_i (len(a) = len(b) ≤ max(Dim, MaxHeads)) in
// binary32 in order: orderSeq and orderRev accumulate with the variant's
// madd, orderTree rounds each product and sums them pairwise (tree32).
func (s sim32) sum32(order string, a, b []float32) float32 {
	switch order {
	case orderRev:
		var acc float32
		for i := len(a) - 1; i >= 0; i-- {
			acc = s.madd(a[i], b[i], acc)
		}
		return acc
	case orderTree:
		var buf [max(Dim, MaxHeads)]float32
		t := buf[:len(a)]
		for i := range t {
			t[i] = float32(a[i] * b[i])
		}
		return tree32(t)
	}
	var acc float32
	for i := range a {
		acc = s.madd(a[i], b[i], acc)
	}
	return acc
}

// key32 reads a slot's key as the variant's kernel would: the codes (or
// bf16 values) at the slot and its scale (FP4: each code times its
// block's scale, in f32, and scale 1). ok is false when the fault sends
// the read outside the cache (the position then reads as NaN: garbage).
func (s sim32) key32(in *inputs, slot int64, k *[Dim]float32) (scale float32, ok bool) {
	p := in.p
	pitch := int64(p.Pitch())
	if s.fault == "logits-tight-stride" {
		pitch = int64(p.PageBytes()) // pages read as if packed tight
	}
	at, scaleAt := slotBytesPitch(p, slot, pitch)
	page, off := slot>>p.Log2P(), slot&int64(p.PageSize-1)
	switch s.fault {
	case "logits-scale-interleaved":
		if p.Store == StoreFP8 { // [128 codes | scale] records of 132 bytes
			at = page*pitch + off*(Dim+4)
			scaleAt = at + Dim
		}
	case "logits-one-scale-per-page":
		if p.Store == StoreFP8 {
			scaleAt = page*pitch + int64(Dim*p.PageSize)
		}
	case "logits-offset-int32": // byte offsets formed in 32-bit signed arithmetic
		wrap := func(x int64) int64 { return int64(int32(uint32(x))) }
		at = wrap(at)
		if scaleAt >= 0 {
			scaleAt = wrap(scaleAt)
		}
	}
	data := in.cache.Data
	n := int64(len(data))
	switch p.Store {
	case StoreBF16:
		if at < 0 || at+2*Dim > n {
			return 0, false
		}
		for d := range k {
			k[d] = numeric.BF16ToF32(binary.LittleEndian.Uint16(data[at+2*int64(d):]))
		}
		return 1, true
	case StoreFP4:
		if at < 0 || at+FP4CodeBytes > n || scaleAt < 0 || scaleAt+FP4Blocks > n {
			return 0, false
		}
		s.fp4Decode(data[at:at+FP4CodeBytes], data[scaleAt:scaleAt+FP4Blocks], k)
		return 1, true
	}
	if at < 0 || at+Dim > n || scaleAt < 0 || scaleAt+4 > n {
		return 0, false
	}
	for d := range k {
		k[d] = numeric.E4M3ToF32(data[at+int64(d)])
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(data[scaleAt:])), true
}

// fp4Decode decodes 64 packed e2m1 bytes and 4 ue8m0 bytes into f32
// values, code × 2^(e−127) rounded once to f32 (exact in range; ±inf past
// it, NaN for 0xFF), with the variant's FP4 fault.
func (s sim32) fp4Decode(codes, scales []byte, k *[Dim]float32) {
	for d := range k {
		c := fp4Code(codes, d)
		if s.fault == "logits-fp4-nibble-swap" {
			c = fp4Code(codes, d^1) // the high nibble read as the even dim
		}
		blk := d / FP4Block
		if s.fault == "logits-fp4-one-scale" {
			blk = 0
		}
		k[d] = float32(fp4Value(c, scales[blk]))
	}
}

// logit computes position s of query row b in binary32; q holds the
// row's queries, w its weights (as the variant reads them).
func (s sim32) logit(in *inputs, b, pos int, q [][Dim]float32, w []float32, r []float32) float32 {
	p := in.p
	row := in.reqOf(b)
	if s.fault == "logits-page-row0" {
		row = 0
	}
	id := int64(in.tbl.I32(row*p.MaxPages + pos>>p.Log2P()))
	if id < 0 || id >= int64(p.NumPages) {
		return float32(math.NaN()) // a page id past the table: garbage
	}
	slot := id*int64(p.PageSize) + int64(pos&(p.PageSize-1))
	var k [Dim]float32
	scale, ok := s.key32(in, slot, &k)
	if !ok {
		if s.fault == "logits-offset-int32" {
			return 0 // vLLM #52109: the wrapped offset reads zeros
		}
		return float32(math.NaN())
	}
	if s.scaleAt == scaleKey {
		for d := range k {
			k[d] = float32(k[d] * scale)
		}
	}
	ws := w
	if s.scaleAt == scaleHead {
		ws = make([]float32, len(w))
		for h := range w {
			ws[h] = float32(w[h] * scale)
		}
	}
	for h := range q {
		d := s.dot(&q[h], &k)
		if s.fault == "logits-bf16-dot" {
			d = numeric.BF16ToF32(numeric.BF16FromF32(d))
		}
		r[h] = s.relu(d)
	}
	S := s.headSum32(ws, r)
	if s.scaleAt == scaleEnd {
		return float32(S * scale)
	}
	return S
}

// store writes logit x of element i: f32, or bf16 rounded to nearest
// even (truncated for the logits-bf16-truncate fault).
func (s sim32) store(p Params, logits *difftest.Tensor, i int, x float32) {
	if p.BF16Out() {
		logits.SetU16(i, uint16(s.bits(p, x)))
		return
	}
	logits.SetF32(i, x)
}

// bits returns the output bits of logit x as store writes them: the f32
// bits, or the bf16 bits (RNE; truncated for logits-bf16-truncate).
func (s sim32) bits(p Params, x float32) uint32 {
	if !p.BF16Out() {
		return math.Float32bits(x)
	}
	if s.fault == "logits-bf16-truncate" && !math.IsNaN(float64(x)) {
		return math.Float32bits(x) >> 16
	}
	return uint32(numeric.BF16FromF32(x))
}

// simRow is one query row as the variant reads it: its queries and
// weights in f32, a scratch for the heads' terms, the length it scores to
// (scoredTo) and the length past which it writes −inf (when clean).
type simRow struct {
	q        [][Dim]float32
	w, r     []float32
	scoredTo int
}

// row decodes query row b as the variant reads it.
func (s sim32) row(in *inputs, b int) *simRow {
	p := in.p
	H := p.Heads
	rw := &simRow{q: make([][Dim]float32, H), w: make([]float32, H), r: make([]float32, H)}
	for h := 0; h < H; h++ {
		for d := 0; d < Dim; d++ {
			rw.q[h][d] = float32(in.qVal((b*H+h)*Dim + d))
		}
		rw.w[h] = in.w.F32(b*H + h)
		if s.fault == "logits-weights-ignored" {
			rw.w[h] = 1
		}
	}
	L := int(in.lens.I32(b))
	if s.fault == "logits-mtp-shared-len" {
		L = int(in.lens.I32(in.reqOf(b)*p.N() + p.N() - 1)) // the request's last row's length for every row
	}
	rw.scoredTo = L
	if s.fault == "logits-past-length" && p.Clean {
		rw.scoredTo = min(pagesFor(L, p.PageSize)*p.PageSize, p.Stride) // the last page scored whole
	}
	return rw
}

// What the variant writes at one position (sim32.at).
const (
	elemNone   = iota // nothing: the byte keeps the poison
	elemLogit         // a logit
	elemNegInf        // −inf (clean)
)

// at returns what the variant writes at position pos of row b (rw from
// row): nothing, a logit x, or −inf.
func (s sim32) at(in *inputs, rw *simRow, b, pos int) (kind int, x float32) {
	p := in.p
	switch {
	case s.fault == "logits-grid-cap" && pos>>p.Log2P() >= GridCapPages:
		return elemNone, 0 // no block of the grid reaches these pages
	case pos < rw.scoredTo:
		return elemLogit, s.logit(in, b, pos, rw.q, rw.w, rw.r)
	case p.Clean:
		return elemNegInf, 0
	}
	return elemNone, 0
}

// run computes every query row into logits (the [B·next_n, stride]
// output, holding the poison), with the variant's fault.
func (s sim32) run(in *inputs, logits *difftest.Tensor) {
	p := in.p
	in.forChunks(func(b, lo, hi int, _ *rowCtx, _ *scratch) {
		rw := s.row(in, b)
		for pos := lo; pos < hi; pos++ {
			i := b*p.Stride + pos
			switch kind, x := s.at(in, rw, b, pos); kind {
			case elemLogit:
				s.store(p, logits, i, x)
			case elemNegInf:
				setNegInf(p, logits, i)
			}
		}
	})
}

// runSim runs a binary32 kernel variant on a case.
func runSim(c *difftest.Case, outs []*difftest.Tensor, s sim32) error {
	in, err := load(c)
	if err != nil {
		return err
	}
	if len(outs) != 1 {
		return difftest.Inputf("outputs", nil, "want 1 (%s), got %d", NameLogits, len(outs))
	}
	if err := checkLogits(in.p, outs[0]); err != nil {
		return err
	}
	s.run(in, outs[0])
	return nil
}
