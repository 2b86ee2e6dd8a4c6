// The literal family of topk_transform: a suite entry that carries its
// inputs (docs/failures.md: a shrunk case "and a suite entry"), and the
// writer of such entries (triage.SuiteEntryWriter).

package topk

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// FamilyLiteral is the family whose suite entries give the inputs
// themselves: params "scores" (every row's stride f32 bit patterns; with
// dtype bf16 or f16, the exact f32 widening of each 16-bit score) and
// "page_table" (the ids), each a run-length list (runLength), besides the
// common K, P, lengths, stride and raw.
const FamilyLiteral = "literal"

// maxLiteralChars bounds a literal entry's encoded inputs: what one may
// paste into a bug report, not a way to store large cases (use a capture).
const maxLiteralChars = 1 << 20

var _ triage.SuiteEntryWriter = Kernel{}

func paramsLiteral(pr *difftest.Params, g *genConfig) {
	g.scores = pr.String("scores", "")
	g.pageTable = pr.String("page_table", "")
}

// checkLiteral decodes both lists (unset: nothing to check) and checks
// their lengths against batch·stride and batch·max_pages.
func checkLiteral(g *genConfig) error {
	if g.scores != "" {
		v, err := literalList("scores", g.scores, true, g.Batch, g.Stride, "values", "stride")
		if err != nil {
			return err
		}
		if g.wide16() {
			for i, x := range v {
				if widen16(g.ScoreDType, narrowBits(g.ScoreDType, x)) != x {
					return badParam("scores", "value %d (f32 bits %08x) is not a %s value (dtype = %q: every score must be the exact widening of one)", i, x, g.ScoreDType, g.ScoreDType)
				}
			}
		}
	}
	if g.pageTable != "" {
		if _, err := literalList("page_table", g.pageTable, false, g.Batch, g.MaxPages, "ids", "max_pages"); err != nil {
			return err
		}
	}
	return nil
}

// literalList decodes the list s of param key (parseRuns, hex for f32
// bits) and checks that it holds batch·cols elements, a row of cols per
// row of the batch; the error, a *paramError of key, names the elements
// (what) and cols's param (colsKey): "holds 3 ids, batch·max_pages = 2·4
// = 8".
func literalList(key, s string, hex bool, batch, cols int, what, colsKey string) ([]uint32, error) {
	n := batch * cols
	v, err := parseRuns(s, hex, n)
	if err != nil {
		return nil, badParam(key, "%v", err)
	}
	if len(v) != n {
		return nil, badParam(key, "holds %d %s, batch·%s = %d·%d = %d", len(v), what, colsKey, batch, cols, n)
	}
	return v, nil
}

// rowLiteral leaves every valid score +0; applyLiteral writes the given
// ones.
func rowLiteral(_ *genConfig, _ *rng.Stream, dst []uint32) int {
	clear(dst)
	return -1
}

// applyLiteral writes the entry's scores and page table over what was
// drawn, then validates the case: an entry whose inputs break the
// contract is the entry's error (a *paramError), not the generator's.
func applyLiteral(g *genConfig, c *difftest.Case) error {
	if g.scores != "" {
		v, _ := parseRuns(g.scores, true, g.Batch*g.Stride)
		for i, x := range v {
			if g.wide16() {
				c.Inputs[0].SetU16(i, narrowBits(g.ScoreDType, x))
				continue
			}
			c.Inputs[0].SetU32(i, x)
		}
	}
	if g.pageTable != "" {
		v, _ := parseRuns(g.pageTable, false, g.Batch*g.MaxPages)
		for i, x := range v {
			c.Inputs[2].SetU32(i, x)
		}
	}
	if err := Validate(c); err != nil {
		return badParam("scores", "the inputs break the contract: %v", err)
	}
	return nil
}

// parseRuns decodes a run-length list (difftest.ParseRuns): hex, 8 hex
// digits of f32 bits each; else decimal int32s. At most limit values.
func parseRuns(s string, hex bool, limit int) ([]uint32, error) {
	digits := 0
	if hex {
		digits = 8
	}
	v, err := difftest.ParseRuns(s, digits, 32, limit)
	if err != nil {
		return nil, err
	}
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = uint32(x) // an int32's two's-complement bits, or the f32 bits
	}
	return out, nil
}

// runLength encodes v as parseRuns reads it (difftest.RunLength): f32
// bits as 8 hex digits, or int32 values in decimal.
func runLength(v []uint32, hex bool) string {
	w := make([]int64, len(v))
	for i, x := range v {
		if hex {
			w[i] = int64(x)
		} else {
			w[i] = int64(int32(x))
		}
	}
	digits := 0
	if hex {
		digits = 8
	}
	return difftest.RunLength(w, digits)
}

// SuiteEntry renders c as a [[case]] of family literal named name
// (triage.SuiteEntryWriter): K, P, raw, lengths (the seq_lens), stride,
// and the scores and page table run-length encoded. A case whose
// max_pages is not ceil(stride/P), or whose encoding exceeds 1 MiB,
// wraps triage.ErrNoSuiteEntry.
func (Kernel) SuiteEntry(c *difftest.Case, name string) (string, error) {
	v, err := newView(c)
	if err != nil {
		return "", err
	}
	p := v.p
	if want := max((p.Stride+p.P-1)/p.P, 1); p.MaxPages != want {
		return "", fmt.Errorf("%w: max_pages %d is not ceil(stride/P) = %d", triage.ErrNoSuiteEntry, p.MaxPages, want)
	}
	if p.Stride == 0 {
		return "", fmt.Errorf("%w: stride 0", triage.ErrNoSuiteEntry)
	}
	words := func(t *difftest.Tensor) []uint32 {
		w := make([]uint32, t.Len())
		for i := range w {
			w[i] = t.U32(i)
		}
		return w
	}
	sw := make([]uint32, 0, p.Batch*p.Stride)
	for b := 0; b < p.Batch; b++ {
		for i := 0; i < p.Stride; i++ {
			sw = append(sw, v.bits(b, i))
		}
	}
	scores, table := runLength(sw, true), runLength(words(v.table), false)
	if len(scores)+len(table) > maxLiteralChars {
		return "", fmt.Errorf("%w: the inputs take %d characters (limit %d): use the capture file", triage.ErrNoSuiteEntry, len(scores)+len(table), maxLiteralChars)
	}
	lens := make([]string, p.Batch)
	for b := range lens {
		lens[b] = strconv.Itoa(v.length(b))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[[case]]\nkernel = %q\nfamily = %q\nname = %q\n[case.params]\n", KernelName, FamilyLiteral, name)
	fmt.Fprintf(&b, "K = %d\nP = %d\nraw = %v\nlengths = [%s]\nstride = %d\n", p.K, p.P, p.ReturnRaw, strings.Join(lens, ", "), p.Stride)
	if p.wide16() {
		fmt.Fprintf(&b, "dtype = %q\n", p.ScoreDType)
	}
	fmt.Fprintf(&b, "scores = %q\npage_table = %q\n", scores, table)
	return b.String(), nil
}
