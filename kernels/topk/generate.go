// Case generation for topk_transform (docs/contracts/topk_transform.md "Input families"; docs/running.md "Generating inputs"):
// suite parameters, seq_lens, the page tables, and the row-parallel
// drawing of scores from per-row Philox streams.

package topk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
)

// Philox tensor indices of the generator: each input draws from its own
// counter range, and row r of a tensor starts at block uint64(r)<<32, so
// rows are drawn independently and in parallel.
const (
	streamScores    = 0
	streamPageTable = 2
)

// Past-length fill: positions [L, stride) of a row alternate +NaN and +inf,
// the two values that rank highest in key32 order, so an implementation
// that reads past L picks them.
const (
	pastEvenBits = 0x7FC00000 // +NaN
	pastOddBits  = 0x7F800000 // +inf
)

// Page-table kinds (suite param "pages").
const (
	PagesIdentity = "identity" // page_table[b][j] = j in every row
	PagesPerm     = "perm"     // each row a random permutation of [0, max_pages)
	PagesDistinct = "distinct" // row b uses ids b·max_pages + a random permutation: rows share no page
	PagesLarge    = "large"    // as distinct, reflected to the top of the int32 slot range
)

// NewCase draws the case of spec from the Philox streams of key (see
// rng.CaseKey; seed is recorded in the case). Suite parameters
// (spec.Params), common to every family:
//
//	K       int, required: number of picks, in [1, MaxK]
//	P       int, default 64: page size, a power of two in [1, MaxPageSize]
//	lengths []int, required unless runs is given: seq_lens, each in
//	        [0, MaxSeqLen]; row b has length lengths[b mod len(lengths)]
//	runs    [{length, rows, step}], instead of lengths: the batch as runs
//	        of consecutive rows, rows[i] rows of lengths length[i],
//	        length[i] + step[i], … (step default 0: a decode batch; 1: a
//	        prefill chunk); see applyRuns (runs.go)
//	batch   int, default len(lengths) or the runs' rows: rows, in
//	        [1, MaxBatch]; with runs it must equal their rows
//	stride  int, default max(lengths, 1): scores row stride, in
//	        [max(lengths), MaxSeqLen]
//	pages   string, default "distinct": identity, perm, distinct or large
//	raw     bool, default true: whether raw_indices is an output
//	dtype   string, default "f32" ("bf16" for the families16.go
//	        families, which draw 16-bit patterns and refuse "f32"): the
//	        scores dtype, f32, bf16 or f16 (scores16.go); a 16-bit case
//	        narrows what an f32 family draws to its format (round to
//	        nearest even)
//
// plus the family's own (see the family catalog in families.go). Also
// bounded: batch·stride ≤ MaxScores, batch·K ≤ MaxOutputEntries, and for
// distinct and large tables batch·max_pages·P ≤ 2^31 (every id must give
// int32 slots). max_pages = ceil(stride / P). Unused page-table entries
// (j ≥ ceil(L_b/P)) hold −1; score positions past L_b hold +NaN (even)
// and +inf (odd).
//
// Errors: an unknown family or parameter, a value of the wrong type, a
// value out of its range, or a family parameter that some row cannot
// honour (e.g. relu positives above a row's length) is an error
// "case ID: param "KEY": RULE, got VALUE"; nothing is clamped or replaced
// by its default.
func NewCase(spec difftest.CaseSpec, seed, key uint64) (*difftest.Case, error) {
	if spec.Kernel != KernelName {
		return nil, fmt.Errorf("case %s: kernel %q is not %s", spec.ID(), spec.Kernel, KernelName)
	}
	fam, ok := familyByName(spec.Family)
	if !ok {
		return nil, fmt.Errorf("case %s: unknown family %q (known: %v)", spec.ID(), spec.Family, Families())
	}
	g, err := readConfig(spec, fam)
	if err != nil {
		return nil, err
	}
	p := &g.Params
	scores := difftest.MustTensor(TensorScores, p.scoresDType(), p.Batch, p.Stride)
	lens := difftest.MustTensor(TensorSeqLens, difftest.I32, p.Batch)
	table := difftest.MustTensor(TensorPageTable, difftest.I32, p.Batch, p.MaxPages)
	if fam.needle {
		p.Needles = make([]int, p.Batch)
	}
	type buf struct{ row []uint32 }
	_ = parallelRows(p.Batch, func(s *buf, b int) error {
		L := g.lengths[b%len(g.lengths)]
		lens.SetI32(b, int32(L))
		s.row = grow(s.row, L)
		needle := fam.row(g, rng.NewStream(key, streamScores, uint64(b)<<32), s.row)
		if fam.needle {
			p.Needles[b] = needle
		}
		if p.wide16() {
			writeRow16(scores, p, b, L, s.row, fam.bits16)
			g.pageRow(table, b, L, rng.NewStream(key, streamPageTable, uint64(b)<<32))
			return nil
		}
		out := scores.Data[4*b*p.Stride : 4*(b+1)*p.Stride]
		for i := 0; i < p.Stride; i++ {
			x := uint32(pastEvenBits)
			switch {
			case i < L:
				x = s.row[i]
			case i%2 == 1:
				x = pastOddBits
			}
			binary.LittleEndian.PutUint32(out[4*i:], x)
		}
		g.pageRow(table, b, L, rng.NewStream(key, streamPageTable, uint64(b)<<32))
		return nil
	})
	c := &difftest.Case{
		ID:      spec.ID(),
		Kernel:  KernelName,
		Family:  spec.Family,
		Seed:    seed,
		Key:     key,
		Params:  p,
		Inputs:  []*difftest.Tensor{scores, lens, table},
		Outputs: p.Outputs(),
	}
	if fam.literal != nil {
		if err := fam.literal(g, c); err != nil {
			return nil, fmt.Errorf("case %s: %w", spec.ID(), err)
		}
	}
	return c, nil
}

// genConfig is a suite entry decoded: the case Params plus what only the
// generator needs.
type genConfig struct {
	Params
	lengths []int
	// family parameters (see the family catalog); count parameters hold
	// unset when the suite entry does not give them
	above, tied int    // straddle, pseudotie
	positives   int    // relu
	finite      int    // masked
	span        string // lowcontrast
	band        string // pseudotie
	scores      string // literal: every row's stride scores, run-length f32 bits
	pageTable   string // literal: the page table, run-length ids
}

// unset marks a count parameter the suite entry leaves out: its default
// is then derived per row (documented with each family). Any explicit
// negative value is an error, never a request for the default.
const unset = math.MinInt

// paramError is a suite parameter that breaks a rule; readConfig prefixes
// the case id.
type paramError struct{ key, rule string }

func (e *paramError) Error() string { return fmt.Sprintf("param %q: %s", e.key, e.rule) }

func badParam(key, format string, args ...any) error {
	return &paramError{key: key, rule: fmt.Sprintf(format, args...)}
}

// readConfig decodes and checks spec's parameters.
func readConfig(spec difftest.CaseSpec, fam family) (*genConfig, error) {
	g, err := decodeConfig(spec, fam)
	var pe *paramError
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("case %s: %w", spec.ID(), err)
	}
	return g, err
}

// decodeConfig is readConfig; its own checks return a *paramError
// without the case id (difftest.Params errors carry it already).
func decodeConfig(spec difftest.CaseSpec, fam family) (*genConfig, error) {
	pr := difftest.NewParams(spec.ID(), spec.Params)
	g := &genConfig{above: unset, tied: unset, positives: unset, finite: unset}
	g.K = pr.Int("K", 0)
	g.P = pr.Int("P", 64)
	g.lengths = pr.Ints("lengths", nil)
	runs := pr.Tables("runs")
	g.Batch = pr.Int("batch", len(g.lengths))
	g.Stride = pr.Int("stride", 0)
	g.Pages = pr.String("pages", PagesDistinct, PagesIdentity, PagesPerm, PagesDistinct, PagesLarge)
	g.ReturnRaw = pr.Bool("raw", true)
	defDType := ScoreF32
	if fam.bits16 {
		defDType = ScoreBF16
	}
	if dt := pr.String("dtype", defDType, ScoreF32, ScoreBF16, ScoreF16); dt != ScoreF32 {
		g.ScoreDType = dt // f32 stays "", so f32 cases keep their params
	}
	g.Family = spec.Family
	if fam.params != nil {
		fam.params(pr, g)
	}
	if err := pr.Err(); err != nil {
		return nil, err
	}
	_, batchGiven := spec.Params["batch"]
	if runs != nil {
		if err := g.applyRuns(runs, batchGiven); err != nil {
			return nil, err
		}
	}
	switch {
	case g.K < 1:
		return nil, badParam("K", "required, must be ≥ 1, got %d", g.K)
	case g.P < 1 || g.P&(g.P-1) != 0:
		return nil, badParam("P", "must be a power of two ≥ 1, got %d", g.P)
	case len(g.lengths) == 0:
		return nil, badParam("lengths", "required (or runs), at least one length")
	case len(g.lengths) > MaxBatch:
		return nil, badParam("lengths", "has %d elements, above the limit of %d rows (MaxBatch; row b has lengths[b mod len(lengths)])", len(g.lengths), MaxBatch)
	case g.Batch < 1 || g.Batch > MaxBatch:
		return nil, badParam("batch", "must be in [1, %d], got %d", MaxBatch, g.Batch)
	case batchGiven && g.Batch < len(g.lengths):
		return nil, badParam("batch", "%d rows cannot hold the %d lengths given (row b has lengths[b mod %d], so lengths[%d:] would never be drawn): give batch ≥ %d, or fewer lengths", g.Batch, len(g.lengths), len(g.lengths), g.Batch, len(g.lengths))
	}
	maxL := 1
	for i, L := range g.lengths {
		if L < 0 || L > MaxSeqLen {
			return nil, badParam("lengths", "element %d must be in [0, %d], got %d", i, MaxSeqLen, L)
		}
		maxL = max(maxL, L)
	}
	if _, given := spec.Params["stride"]; !given {
		g.Stride = maxL // unset; an explicit 0 is checked below, never read as unset
	}
	if g.Stride < maxL {
		return nil, badParam("stride", "must be ≥ the longest length %d, got %d", maxL, g.Stride)
	}
	// Upper bounds (K, P, stride, the products): checkLimits, reworded as
	// a param error. max_pages = ceil(stride/P) without overflow: stride
	// and P are not bounded yet.
	g.MaxPages = g.Stride / g.P
	if g.Stride%g.P != 0 {
		g.MaxPages++
	}
	if err := checkLimits(&g.Params); err != nil {
		var ie *difftest.InputError
		if errors.As(err, &ie) {
			return nil, badParam(ie.Tensor, "%s", ie.Rule)
		}
		return nil, err
	}
	if ids := int64(g.Batch) * int64(g.MaxPages); g.Pages != PagesIdentity && g.Pages != PagesPerm && ids*int64(g.P) > 1<<31 {
		return nil, badParam("pages", "%s needs %d distinct pages of %d slots, beyond the int32 slot range", g.Pages, ids, g.P)
	}
	if fam.bits16 && !g.wide16() {
		return nil, badParam("dtype", "family %s draws 16-bit scores: give dtype = %q or %q", fam.name, ScoreBF16, ScoreF16)
	}
	if fam.check != nil {
		if err := fam.check(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// rowLengths returns the lengths the rows use: row b has
// lengths[b mod len(lengths)], and batch ≥ len(lengths) (decodeConfig), so
// every length is drawn.
func (g *genConfig) rowLengths() []int { return g.lengths[:min(g.Batch, len(g.lengths))] }

// wholeRow is the room of a count parameter whose values may take any
// of a row's L positions (checkCount).
func wholeRow(L int) int { return L }

// checkCount checks an explicit count parameter v of the family (unset
// passes): v ≥ 0, and v ≤ room(L) for the length L of every row, where
// room states how many positions of a row the parameter may fill and
// rule says so in words for the error.
func (g *genConfig) checkCount(key string, v int, room func(L int) int, rule string) error {
	if v == unset {
		return nil
	}
	if v < 0 {
		return badParam(key, "must be ≥ 0, got %d", v)
	}
	for b, L := range g.rowLengths() {
		if r := room(L); v > r {
			return badParam(key, "%s: row %d has seq_len %d, room for %d, got %d", rule, b, L, r, v)
		}
	}
	return nil
}

// pageRow writes page_table[b] for a row of length L: the kind's ids on
// the used range [0, ceil(L/P)), −1 after it. Injective within the row for
// every kind (the checker inverts it when raw_indices is not returned).
func (g *genConfig) pageRow(table *difftest.Tensor, b, L int, st *rng.Stream) {
	m := g.MaxPages
	used := (L + g.P - 1) / g.P
	var ids []int
	if g.Pages != PagesIdentity {
		ids = st.Perm(m)
	}
	top := int64(math.MaxInt32)/int64(g.P) - int64(b)*int64(m) // largest id of row b for "large"
	for j := 0; j < m; j++ {
		v := int64(-1)
		if j < used {
			switch g.Pages {
			case PagesIdentity:
				v = int64(j)
			case PagesPerm:
				v = int64(ids[j])
			case PagesDistinct:
				v = int64(b)*int64(m) + int64(ids[j])
			case PagesLarge:
				v = top - int64(ids[j])
			}
		}
		table.SetI32(b*m+j, int32(v))
	}
}

// family is one input family: its name, the parameters it reads and its
// row generator. row fills dst (length L) with f32 bits and returns the
// needle position, or −1.
type family struct {
	name   string
	needle bool
	// bits16: row writes 16-bit patterns of the case's score_dtype in
	// the low half of each dst element (families16.go); such a family
	// needs dtype bf16 or f16.
	bits16 bool
	params func(pr *difftest.Params, g *genConfig)
	// check, when set, rejects family parameters some row cannot honour
	// (a *paramError); it runs after the common parameters are checked.
	check func(g *genConfig) error
	row   func(g *genConfig, st *rng.Stream, dst []uint32) int
	// literal, when set, replaces what was drawn by the inputs the suite
	// entry gives (FamilyLiteral) and checks the case; its error is a
	// *paramError.
	literal func(g *genConfig, c *difftest.Case) error
}

// Families returns the family names NewCase accepts, sorted.
func Families() []string {
	names := make([]string, len(families))
	for i, f := range families {
		names[i] = f.name
	}
	slices.Sort(names)
	return names
}

func familyByName(name string) (family, bool) {
	for _, f := range families {
		if f.name == name {
			return f, true
		}
	}
	return family{}, false
}
