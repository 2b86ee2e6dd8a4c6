// Case generation for indexer_logits (docs/contracts/indexer_logits.md "Input families",
// docs/running.md): suite parameters, the paged cache written by the norm_rope_store
// reference, the page tables, queries and weights.

package logits

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/numeric"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/kernels/normrope"
)

// Philox tensor indices of the generator (docs/running.md): each input draws
// from its own counter range; row b starts at block uint64(b)<<32.
const (
	streamQ       = 0 // q, per row
	streamWeights = 1 // weights, per row
	streamTable   = 2 // page ids
	streamKeys    = 3 // the norm_rope_store sub-cases' keys, one word pair per chunk
	streamPlan    = 4 // per-case choices of a family (which slots are special)
	streamTokens  = 5 // tokens a family draws itself (negative), per chunk
)

// Page-table kinds (suite param "pages").
const (
	PagesIdentity = "identity" // page_table[b][j] = j in every row: rows share their first pages (a common prefix)
	PagesPerm     = "perm"     // each row a random permutation of [0, max used pages): rows share pages in other orders
	PagesDistinct = "distinct" // every row its own pages, all of them shuffled over [0, used pages)
	PagesHigh     = "high"     // as distinct, at the top of a larger cache: ids in [num_pages − used, num_pages)
)

// Trap pattern of the cache pages no row uses: e4m3fn NaN codes and NaN
// scales (FP8), bf16 NaN (BF16), e2m1 −6 codes and ue8m0 NaN scale bytes
// 0xFF (FP4, every byte 0xFF), so a kernel that reads an unused page
// returns NaN where the reference is finite. The padding of every page
// (bytes [page_bytes, page_stride)) is poisoned alike: 0x7F bytes (FP8:
// NaN codes, or the scale 3.4e38), bf16 NaN (BF16), 0xFF (FP4).
const (
	trapFP8Code  = 0x7F
	trapScale    = 0x7FC00000
	trapBF16Bits = 0x7FC0
	trapFP4Byte  = 0xFF
)

// keyChunkTokens bounds the tokens of one norm_rope_store sub-case (the
// keys are written in chunks of whole pages, so x stays small).
const keyChunkTokens = 1 << 16

// keyPositions is the rows of the sub-cases' YaRN table: each key's RoPE
// position is uniform in [0, keyPositions).
const keyPositions = 512

// gen is one case being generated: the decoded suite parameters and the
// page plan.
type gen struct {
	Params
	key     uint64
	fam     family
	lengths []int    // per row
	pages   [][]int  // per row, the physical id of each used page
	compact [][2]int // (row, page) of compact page u; identity and perm: (−1, id), rows share them
	// physical is the physical id of compact page u
	physical []int
	counts   []int // page-counts family: the page counts
	special  int   // nan-keys family: 1 in special slots are NaN / special scales
}

// unset marks a count parameter the suite entry leaves out.
const unset = math.MinInt

// NewCase draws the case of spec from the Philox streams of key (see
// rng.CaseKey; seed is recorded in the case). Suite parameters, common to
// every family:
//
//	lengths    []int, required (but for page-counts): seq_lens, each in
//	           [0, MaxSeqLen]; row b has lengths[b mod len(lengths)]
//	batch      int, default len(lengths): rows, in [1, MaxBatch]
//	stride     int, default max(lengths, 1): logits row stride, ≥ every length
//	P          int, default 64: page size, a power of two in [1, MaxPageSize]
//	H          int, default 16: heads, in [1, MaxHeads]
//	store      string, default "fp8": fp8, bf16 or fp4
//	clean      bool, default true: positions past L_b must be −inf
//	accum_bits int, default 24: the accumulation precision declared (bound.go)
//	next_n     int, default 1: query rows per request, in [1, MaxNextN];
//	           row r of request b sees max(0, L_b − (next_n − 1 − r)) keys
//	           (multi-token prediction: the last row sees L_b)
//	page_stride int, default the tight page size: bytes from one cache
//	           page to the next, a multiple of 4 ≥ 132·P, 256·P or 68·P;
//	           the padding is poisoned
//	logits_dtype string, default "f32": f32 or bf16
//	pages      string, default "distinct": identity, perm, distinct or high
//	num_pages  int, default the pages used (4× for high): cache pages; the
//	           unused ones hold NaN codes and scales
//	max_pages  int, default ceil(stride / P): page-table row width, ≥
//	           every row's ceil(L_b / P); entries past a row's pages hold −1
//
// plus the family's own (families.go). Keys are written by the
// norm_rope_store reference (preset v4 for FP8, v4-bf16 for BF16, P as
// here) from tokens of the family, so every slot has its own scale;
// every slot of a used page holds a key, also past L_b. q: FP8, per (row,
// head) e4m3fn codes of N(0,1) values scaled so the head's amax is 448,
// the scale folded into the weight (DeepSeek's per-head query
// quantisation); BF16, bf16(N(0,1)); FP4, per (row, head) and 32-dim
// block packed e2m1 codes of N(0,1) values under the block's ue8m0 scale
// 2^ceil(log2 max(amax/6, 1e-4)) (ties to even, −0 stored as +0).
// FP4 keys are the BF16 store's keys (v4-bf16) packed by the same rule.
// weights: N(0,1)/√H, about 1 in 8 exactly 0, of both signs.
//
// Errors: an unknown family or parameter, a mistyped value, a value out
// of range, num_pages or max_pages below what the rows need: "case ID:
// param "KEY": RULE"; nothing is clamped.
func NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	g, err := plan(spec)
	if err != nil {
		return nil, err
	}
	g.key = key
	g.assignPages()
	p := &g.Params
	q := difftest.MustTensor(NameQ, p.QDType(), p.QShape()...)
	w := difftest.MustTensor(NameWeights, difftest.F32, p.Rows(), p.Heads)
	cache := difftest.MustTensor(NameCache, difftest.U8, p.NumPages, p.Pitch())
	lens := difftest.MustTensor(NameSeqLens, difftest.I32, p.LensShape()...)
	table := difftest.MustTensor(NamePageTable, difftest.I32, p.Batch, p.MaxPages)
	n := p.N()
	for b := 0; b < p.Batch; b++ {
		for r := 0; r < n; r++ {
			lens.SetI32(b*n+r, int32(max(0, g.lengths[b]-(n-1-r))))
		}
		for j := 0; j < p.MaxPages; j++ {
			id := int32(-1)
			if j < len(g.pages[b]) {
				id = int32(g.pages[b][j])
			}
			table.SetI32(b*p.MaxPages+j, id)
		}
	}
	for i := 0; i < p.Rows(); i++ {
		g.drawQuery(i, q, w)
	}
	if err := g.writeKeys(spec, seed, cache); err != nil {
		return nil, err
	}
	if g.fam.post != nil {
		g.fam.post(g, cache)
	}
	return &difftest.Case{
		ID: spec.ID(), Kernel: KernelName, Family: spec.Family, Seed: seed, Key: key, Params: g.Params,
		Inputs:  []*difftest.Tensor{q, w, cache, lens, table},
		Outputs: g.Params.Outputs(),
	}, nil
}

// CheckSpec returns the error NewCase would return for spec, for every
// seed, without drawing or allocating the tensors (difftest.SpecChecker).
func CheckSpec(spec difftest.CaseSpec) error {
	_, err := plan(spec)
	return err
}

// paramError is a suite parameter that breaks a rule; plan prefixes the
// case id.
type paramError struct{ key, rule string }

func (e *paramError) Error() string { return fmt.Sprintf("param %q: %s", e.key, e.rule) }

func badParam(key, format string, args ...any) error {
	return &paramError{key: key, rule: fmt.Sprintf(format, args...)}
}

// plan decodes and checks spec's parameters and lays out the pages:
// everything NewCase decides before it draws (the page permutations are
// drawn here too: they are small and decide num_pages).
func plan(spec difftest.CaseSpec) (*gen, error) {
	g, err := decode(spec)
	var pe *paramError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("case %s: %w", spec.ID(), err)
	}
	return g, err
}

func decode(spec difftest.CaseSpec) (*gen, error) {
	if spec.Kernel != KernelName {
		return nil, fmt.Errorf("case %s: kernel %q is not %s", spec.ID(), spec.Kernel, KernelName)
	}
	fam, ok := families[spec.Family]
	if !ok {
		return nil, fmt.Errorf("case %s: unknown family %q (known: %v)", spec.ID(), spec.Family, Families())
	}
	pr := difftest.NewParams(spec.ID(), spec.Params)
	g := &gen{fam: fam, special: unset}
	g.Family = spec.Family
	var lengths []int
	if fam.lengths == nil {
		lengths = pr.Ints("lengths", nil)
	}
	if fam.params != nil {
		fam.params(pr, g)
	}
	g.PageSize = pr.Int("P", 64)
	g.Heads = pr.Int("H", 16)
	g.Store = pr.String("store", StoreFP8, StoreFP8, StoreBF16, StoreFP4)
	g.Clean = pr.Bool("clean", true)
	g.AccumBits = pr.Int("accum_bits", DefaultAccumBits)
	nextN := pr.Int("next_n", unset)
	pageStride := pr.Int("page_stride", unset)
	if dt := pr.String("logits_dtype", LogitsF32, LogitsF32, LogitsBF16); dt != LogitsF32 {
		g.LogitsDType = dt
	}
	g.Pages = pr.String("pages", PagesDistinct, PagesIdentity, PagesPerm, PagesDistinct, PagesHigh)
	numPages := pr.Int("num_pages", 0)
	maxPages := pr.Int("max_pages", 0)
	stride := pr.Int("stride", 0)
	batch := pr.Int("batch", 0)
	if err := pr.Err(); err != nil {
		return nil, err
	}
	switch {
	case nextN == 0:
		return nil, badParam("next_n", "must be in [1, %d] (omit it for 1), got 0", MaxNextN)
	case nextN != unset:
		g.NextN = nextN
	}
	switch {
	case pageStride == 0:
		return nil, badParam("page_stride", "must be ≥ the tight page size (omit it for tight pages), got 0")
	case pageStride != unset:
		g.PageStride = pageStride
	}
	// Configuration first (P bounds every product below).
	probe := g.Params
	probe.NumPages = 1
	if err := probe.Check(); err != nil {
		return nil, asParam(err)
	}
	if fam.lengths != nil {
		var err error
		if lengths, err = fam.lengths(g); err != nil {
			return nil, err
		}
	}
	if len(lengths) == 0 {
		return nil, badParam("lengths", "required, at least one length")
	}
	// An explicit 0 is a value (refused below), never "unset".
	_, batchGiven := spec.Params["batch"]
	_, strideGiven := spec.Params["stride"]
	_, maxPagesGiven := spec.Params["max_pages"]
	_, numPagesGiven := spec.Params["num_pages"]
	if !batchGiven {
		batch = len(lengths)
	}
	if batch < 1 || batch > MaxBatch {
		return nil, badParam("batch", "must be in [1, %d], got %d", MaxBatch, batch)
	}
	maxL := 1
	for i, L := range lengths {
		if L < 0 || L > MaxSeqLen {
			return nil, badParam("lengths", "element %d must be in [0, %d], got %d", i, MaxSeqLen, L)
		}
		maxL = max(maxL, L)
	}
	if !strideGiven {
		stride = maxL
	}
	if stride < maxL || stride > MaxSeqLen {
		return nil, badParam("stride", "must be in [the longest length %d, %d], got %d", maxL, MaxSeqLen, stride)
	}
	g.Batch, g.Stride = batch, stride
	g.lengths = make([]int, batch)
	for b := range g.lengths {
		g.lengths[b] = lengths[b%len(lengths)]
	}
	if !maxPagesGiven {
		maxPages = pagesFor(stride, g.PageSize)
	}
	need := pagesFor(maxL, g.PageSize)
	if maxPages < need || maxPages > MaxPages {
		return nil, badParam("max_pages", "must be in [ceil(%d/%d) = %d, %d] (the longest row's pages), got %d", maxL, g.PageSize, need, MaxPages, maxPages)
	}
	g.MaxPages = maxPages
	if int64(batch)*int64(maxPages) > MaxTableEntries {
		return nil, badParam("batch·max_pages", "exceeds the limit of %d page-table entries: got %d", MaxTableEntries, int64(batch)*int64(maxPages))
	}
	if int64(batch)*int64(g.N()) > MaxBatch {
		return nil, badParam("batch·next_n", "exceeds the limit of %d query rows: got %d", MaxBatch, int64(batch)*int64(g.N()))
	}
	if int64(batch)*int64(g.N())*int64(stride) > MaxLogits {
		return nil, badParam("batch·next_n·stride", "exceeds the limit of %d logits: got %d", MaxLogits, int64(batch)*int64(g.N())*int64(stride))
	}
	if numPagesGiven && numPages < 1 {
		return nil, badParam("num_pages", "must be ≥ 1 (and hold the pages the rows use), got %d", numPages)
	}
	if err := g.sizeCache(g.usedPages(), numPages); err != nil {
		return nil, err
	}
	if fam.check != nil {
		if err := fam.check(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// asParam rewords a Params.Check error as a suite param error.
func asParam(err error) error {
	var ie *difftest.InputError
	if errors.As(err, &ie) {
		return badParam(ie.Tensor, "%s", ie.Rule)
	}
	return err
}

// usedPages returns the number of compact pages (the pages whose keys are
// drawn): the longest row's page count for identity and perm, whose rows
// share pages, the sum of every row's for distinct and high.
func (g *gen) usedPages() int {
	sum, maxN := 0, 0
	for _, L := range g.lengths {
		n := pagesFor(L, g.PageSize)
		sum += n
		maxN = max(maxN, n)
	}
	if g.Pages == PagesIdentity || g.Pages == PagesPerm {
		return maxN
	}
	return sum
}

// sizeCache fixes num_pages: given, or the default (the pages used, 4×
// for high; at least 1).
func (g *gen) sizeCache(used, numPages int) error {
	def := max(used, 1)
	if g.Pages == PagesHigh {
		def = 4 * def
	}
	if numPages == 0 {
		numPages = def
	}
	if numPages < max(used, 1) {
		return badParam("num_pages", "the rows use %d pages, got %d", used, numPages)
	}
	g.NumPages = numPages
	return asParam(g.Params.Check())
}

// assignPages draws the compact pages' physical ids and each row's page
// ids: identity j; perm, row b's own permutation of [0, max used pages);
// distinct, every (row, page) a distinct id of one shuffle of [0, used);
// high, that shuffle moved to [num_pages − used, num_pages).
func (g *gen) assignPages() {
	used := g.usedPages()
	g.pages = make([][]int, g.Batch)
	st := func(i uint64) *rng.Stream { return rng.NewStream(g.key, streamTable, i<<32) }
	if g.Pages == PagesIdentity || g.Pages == PagesPerm {
		g.physical = make([]int, used)
		for u := range g.physical {
			g.physical[u] = u
			g.compact = append(g.compact, [2]int{-1, u})
		}
		for b, L := range g.lengths {
			var ids []int
			if g.Pages == PagesPerm {
				ids = st(uint64(b)).Perm(used)
			}
			for j := 0; j < pagesFor(L, g.PageSize); j++ {
				id := j
				if ids != nil {
					id = ids[j]
				}
				g.pages[b] = append(g.pages[b], id)
			}
		}
		return
	}
	perm := st(1 << 30).Perm(used)
	base := 0
	if g.Pages == PagesHigh {
		base = g.NumPages - used
	}
	for b, L := range g.lengths {
		for j := 0; j < pagesFor(L, g.PageSize); j++ {
			u := len(g.compact)
			id := base + perm[u]
			g.compact = append(g.compact, [2]int{b, j})
			g.physical = append(g.physical, id)
			g.pages[b] = append(g.pages[b], id)
		}
	}
}

// drawQuery writes query row b's queries and weights (rows are
// request·next_n + r; for next_n = 1 the row is the request).
func (g *gen) drawQuery(b int, q, w *difftest.Tensor) {
	H := g.Heads
	qs := rng.NewStream(g.key, streamQ, uint64(b)<<32)
	ws := rng.NewStream(g.key, streamWeights, uint64(b)<<32)
	var v [Dim]float64
	for h := 0; h < H; h++ {
		if g.fam.query != nil {
			g.fam.query(g, qs, &v)
		} else {
			for d := range v {
				v[d] = qs.Normal()
			}
		}
		amax := 0.0
		for _, x := range v {
			amax = math.Max(amax, math.Abs(x))
		}
		wt := ws.Normal() / math.Sqrt(float64(H))
		if ws.Intn(8) == 0 {
			wt = 0
		}
		base := (b*H + h) * Dim
		switch g.Store {
		case StoreBF16:
			for d, x := range v {
				q.SetU16(base+d, numeric.BF16FromF64(x))
			}
		case StoreFP4:
			rec := q.Data[(b*H+h)*FP4TokenBytes:]
			packFP4(&v, rec[:FP4CodeBytes], rec[FP4CodeBytes:FP4TokenBytes])
		default:
			sq := amax / numeric.E4M3Max
			for d, x := range v {
				q.Data[base+d] = numeric.E4M3FromF64(x / sq)
			}
			wt *= sq
		}
		w.SetF32(b*H+h, float32(wt))
	}
}

// PackFP4 packs 128 values into one 68-byte FP4 record rec (the 64 code
// bytes, then the 4 ue8m0 block scales) by packFP4's rule: an FP4 query
// head of q as this kernel takes it, and as other kernels' generators
// (the pipeline's FP4 queries) build one.
func PackFP4(v *[Dim]float64, rec []byte) {
	packFP4(v, rec[:FP4CodeBytes], rec[FP4CodeBytes:FP4TokenBytes])
}

// packFP4 packs 128 values as the FP4 store does: per 32-dim block the
// ue8m0 scale s = 2^ceil(log2 max(amax/6, 1e-4)) (f32, SGLang's packer
// rule, docs/contracts/norm_rope_store.md "FP4 keys"), the codes e2m1(x/s)
// ties to even with −0 stored as +0, dim 2i in the low nibble of byte i.
func packFP4(v *[Dim]float64, codes, scales []byte) {
	for blk := 0; blk < FP4Blocks; blk++ {
		amax := 0.0
		for _, x := range v[blk*FP4Block : (blk+1)*FP4Block] {
			amax = math.Max(amax, math.Abs(x))
		}
		e := numeric.UE8M0CeilF32(max(float32(amax)/6, 1e-4))
		scales[blk] = e
		inv := 1 / numeric.UE8M0ToF64(e)
		for d := blk * FP4Block; d < (blk+1)*FP4Block; d++ {
			c := numeric.E2M1FromF64(v[d] * inv)
			if c == 0x8 {
				c = 0
			}
			if d&1 == 0 {
				codes[d/2] = c
			} else {
				codes[d/2] |= c << 4
			}
		}
	}
}

// fillTrap writes the trap pattern over a whole page of pitch bytes: the
// unused-page pattern on [0, page_bytes), the padding poison after it.
func fillTrap(p Params, page []byte) {
	pb, P := p.PageBytes(), p.PageSize
	switch p.Store {
	case StoreBF16:
		for i := 0; i+1 < len(page); i += 2 {
			binary.LittleEndian.PutUint16(page[i:], trapBF16Bits)
		}
	case StoreFP4:
		for i := range page {
			page[i] = trapFP4Byte
		}
	default:
		for i := 0; i < Dim*P; i++ {
			page[i] = trapFP8Code
		}
		for i := Dim * P; i < pb; i += 4 {
			binary.LittleEndian.PutUint32(page[i:], trapScale)
		}
		for i := pb; i < len(page); i++ {
			page[i] = trapFP8Code
		}
	}
}

// writeKeys fills the cache: the trap pattern everywhere, then the keys of
// every compact page, written by the norm_rope_store reference in chunks
// of whole pages, each chunk's page u copied to its physical id (FP4: the
// BF16 store's keys packed by packFP4). Page padding keeps its poison.
func (g *gen) writeKeys(spec difftest.CaseSpec, seed uint64, cache *difftest.Tensor) error {
	pb := g.PageBytes()
	pitch := g.Pitch()
	P := g.PageSize
	for pg := 0; pg < g.NumPages; pg++ {
		fillTrap(g.Params, cache.Data[pg*pitch:(pg+1)*pitch])
	}
	var pool [][Dim]uint16
	if g.fam.tokens == nil {
		pool = g.tokenPool(min(poolSize, max(1, len(g.compact)*P)))
	}
	perChunk := max(1, keyChunkTokens/P)
	preset := normrope.PresetV4
	if g.Store == StoreBF16 || g.Store == StoreFP4 {
		preset = normrope.PresetV4BF16
	}
	for c0, ci := 0, 0; c0 < len(g.compact); c0, ci = c0+perChunk, ci+1 {
		n := min(perChunk, len(g.compact)-c0)
		// The sub-case's cache has room for N + max(1, N/8) slots (its
		// generator's rule); tokens go to slots [0, N), pages [0, n).
		N := n * P
		subPages := pagesFor(N+max(1, N/8), P)
		sub := difftest.CaseSpec{Kernel: normrope.KernelName, Family: "zero", Name: fmt.Sprintf("%s/keys/%d", spec.Name, ci),
			Params: map[string]any{"preset": preset, "P": int64(P), "N": int64(N), "num_pages": int64(subPages), "holes": false, "max_pos": int64(keyPositions)}}
		subKey := rng.NewStream(g.key, streamKeys, uint64(ci)<<32).Uint64()
		nc, err := normrope.NewCase(sub, seed, subKey)
		if err != nil {
			return fmt.Errorf("case %s: keys: %w", spec.ID(), err)
		}
		loc := nc.Input(normrope.NameOutLoc)
		for t := 0; t < loc.Len(); t++ {
			loc.SetI64(t, int64(t)) // token t of the chunk in slot t: compact page c0 + t/P, offset t%P
		}
		if g.fam.tokens != nil {
			g.fam.tokens(g, nc, ci)
		} else {
			g.poolTokens(nc, ci, pool)
		}
		o := nc.Outputs[0]
		part := difftest.MustTensor(o.Name, o.DType, o.Shape...)
		if err := normrope.Compute(nc, part); err != nil {
			return fmt.Errorf("case %s: keys: %w", spec.ID(), err)
		}
		for u := 0; u < n; u++ {
			id := g.physical[c0+u]
			dst := cache.Data[id*pitch : id*pitch+pb]
			if g.Store != StoreFP4 {
				copy(dst, part.Data[u*pb:(u+1)*pb])
				continue
			}
			src := part.Data[u*2*Dim*P:]
			var v [Dim]float64
			for o := 0; o < P; o++ {
				for d := range v {
					v[d] = numeric.BF16ToF64(binary.LittleEndian.Uint16(src[(o*Dim+d)*2:]))
				}
				packFP4(&v, dst[o*FP4CodeBytes:(o+1)*FP4CodeBytes], dst[FP4CodeBytes*P+o*FP4Blocks:FP4CodeBytes*P+(o+1)*FP4Blocks])
			}
		}
	}
	return nil
}

// poolSize is the most Gaussian vectors the tokens are made from (fewer
// when the case has fewer slots).
const poolSize = 4096

// tokenPool draws n vectors of 128 N(0,1) values, as bf16 bits.
func (g *gen) tokenPool(n int) [][Dim]uint16 {
	pool := make([][Dim]uint16, n)
	for i := range pool {
		st := rng.NewStream(g.key, streamTokens, uint64(i)<<32|1<<63)
		for d := range pool[i] {
			pool[i][d] = numeric.BF16FromF64(st.Normal())
		}
	}
	return pool
}

// poolTokens writes the x of key chunk ci's norm_rope_store sub-case:
// token t is σ·(±v_d) with v a vector of the pool picked at random, an
// independent random sign per dim, and σ = 2^k, k uniform in [−4, 4]
// (exact on the bf16 bits: the exponent moves by k).
// The signs make every token its own i.i.d. Gaussian vector (2^128 sign
// patterns per pool vector) for 5 words instead of 128 Box–Muller draws,
// so a 262,144-key row costs a fraction of a second; tokens of one pool
// vector share their magnitudes, nothing else. The sub-case keeps the
// norm weights it drew.
func (g *gen) poolTokens(nc *difftest.Case, ci int, pool [][Dim]uint16) {
	x := nc.Input(normrope.NameX)
	n, stride := x.Shape[0], x.Shape[1]
	st := rng.NewStream(g.key, streamTokens, uint64(ci)<<32)
	for t := 0; t < n; t++ {
		v := &pool[st.Intn(len(pool))]
		k := st.Intn(9) - 4
		row := x.Data[2*t*stride:]
		for w := 0; w < Dim/32; w++ {
			signs := st.Uint32()
			for i := 0; i < 32; i++ {
				d := 32*w + i
				b := v[d]
				if b&0x7FFF != 0 {
					b += uint16(k << 7) // exponent + k: Box–Muller gives 2^-50 < |v| < 2^4, far from bf16's limits
				}
				b ^= uint16(signs>>i&1) << 15
				binary.LittleEndian.PutUint16(row[2*d:], b)
			}
		}
	}
}

// FromTensors rebuilds a case from a capture file: params is the JSON of
// Params (unknown fields are errors), tensors holds the five inputs under
// their contract names. The shape facts in params must agree with the
// tensors (the inputs themselves are checked by Validate). Errors name the
// missing tensor or the disagreeing field.
func FromTensors(id string, params []byte, tensors map[string]*difftest.Tensor) (*difftest.Case, error) {
	p, err := ParseParams(params)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", id, err)
	}
	if err := layoutFromShapes(&p, params, tensors); err != nil {
		return nil, fmt.Errorf("case %s: %w", id, err)
	}
	c := &difftest.Case{ID: id, Kernel: KernelName, Family: p.Family, Params: p, Outputs: p.Outputs()}
	if c.Inputs, err = difftest.CaptureInputs(id, InputNames(), tensors); err != nil {
		return nil, err
	}
	return c, nil
}

// layoutFromShapes reads the layout a captured case's tensors state where
// its params leave it out: page_stride from the cache's row length when it
// is not the tight page, next_n from a 2-D seq_lens [B, next_n]. A param
// that is given is kept (Validate then checks the shapes against it), so
// an explicit value is never overridden; a tensor missing here is left to
// CaptureInputs to report.
func layoutFromShapes(p *Params, raw []byte, tensors map[string]*difftest.Tensor) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return err
	}
	if _, given := keys["page_stride"]; !given {
		if t := tensors[NameCache]; t != nil && len(t.Shape) == 2 && t.Shape[1] != p.PageBytes() {
			p.PageStride = t.Shape[1]
		}
	}
	if _, given := keys["next_n"]; !given {
		if t := tensors[NameSeqLens]; t != nil && len(t.Shape) == 2 {
			p.NextN = t.Shape[1]
		}
	}
	return nil
}
