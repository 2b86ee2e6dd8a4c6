// The literal family of norm_rope_store: a suite entry that carries its
// inputs (docs/failures.md: a shrunk case "and a suite entry"), and the
// writer of such entries (triage.SuiteEntryWriter).

package normrope

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
)

// FamilyLiteral is the family whose suite entries give the inputs
// themselves (params x, weight, bias, freqs, positions, out_loc, each a
// run-length list; see literalParams) besides the configuration, N,
// x_stride, max_pos, num_pages and P. An input it leaves out is the
// generator's default (x +0, weight, bias, positions, out_loc as every
// family draws them, the model's freqs table).
const FamilyLiteral = "literal"

// maxLiteralChars bounds a literal entry's encoded inputs (what one may
// paste; a larger case stays a capture).
const maxLiteralChars = 1 << 20

var _ triage.SuiteEntryWriter = Kernel{}

// literalParams documents the lists of FamilyLiteral.
var literalParams = []difftest.ParamInfo{
	{Name: "x", Doc: `string: N·x_stride bf16 bit patterns, row-major, 4 hex digits each, "HEX*N" for N repeats`},
	{Name: "weight", Doc: `string: 128 f32 bit patterns, 8 hex digits each, "HEX*N" for N repeats`},
	{Name: "bias", Doc: `string: 128 f32 bit patterns, as weight`},
	{Name: "freqs", Doc: `string: max_pos·64 f32 bit patterns, row-major, as weight`},
	{Name: "positions", Doc: `string: N decimal positions in [0, max_pos), "P*N" for N repeats`},
	{Name: "out_loc", Doc: `string: N decimal slots (−1: no write), "S*N" for N repeats`},
}

// literal is a literal entry's lists, as given and decoded.
type literal struct {
	text    [6]string // x, weight, bias, freqs, positions, out_loc
	decoded [6][]int64
}

// literalKinds are the lists in literal.text order: param name, digits of
// a hex element (0: decimal), element count for a case.
var literalKinds = [6]struct {
	name   string
	digits int
	count  func(g *gen) int
}{
	{NameX, 4, func(g *gen) int { return g.n * g.stride }},
	{NameWeight, 8, func(*gen) int { return Dim }},
	{NameBias, 8, func(*gen) int { return Dim }},
	{NameFreqs, 8, func(g *gen) int { return g.maxPos * RopeDim }},
	{NamePositions, 0, func(g *gen) int { return g.n }},
	{NameOutLoc, 0, func(g *gen) int { return g.n }},
}

// readLiteral reads the lists (keys spelled out: describe_test finds the
// params the source reads by their literal keys).
func readLiteral(pp *difftest.Params) *literal {
	return &literal{text: [6]string{
		pp.String("x", ""), pp.String("weight", ""), pp.String("bias", ""),
		pp.String("freqs", ""), pp.String("positions", ""), pp.String("out_loc", ""),
	}}
}

// decode parses every given list and checks its length against the
// case's sizes.
func (l *literal) decode(g *gen) error {
	for i, k := range literalKinds {
		if l.text[i] == "" {
			continue
		}
		want := k.count(g)
		v, err := difftest.ParseRuns(l.text[i], k.digits, 64, want)
		if err != nil {
			return fmt.Errorf("param %q: %w", k.name, err)
		}
		if len(v) != want {
			return fmt.Errorf("param %q: holds %d values, the case needs %d", k.name, len(v), want)
		}
		l.decoded[i] = v
	}
	return nil
}

// literalSlots is the cache FamilyLiteral needs by default: one slot for
// N tokens, so any num_pages ≥ 1 may be given (the entry's out_loc must
// fit it, which Validate checks).
func literalSlots(n, p int) int { return 1 }

// fillLiteral leaves x +0 where the entry gives none (the defaults drew
// the rest); apply writes the entry's lists.
func fillLiteral(g *gen) {}

// apply writes the decoded lists into c's inputs (x, weight, bias, freqs,
// positions, out_loc are Inputs[0..5]) and validates c: an entry whose
// inputs break the contract is the entry's error.
func (l *literal) apply(c *difftest.Case) error {
	for i, v := range l.decoded {
		if v == nil {
			continue
		}
		t := c.Inputs[i]
		for j, x := range v {
			switch t.DType {
			case difftest.BF16:
				t.SetU16(j, uint16(x))
			case difftest.F32:
				t.SetU32(j, uint32(x))
			default:
				t.SetI64(j, x)
			}
		}
	}
	if err := Validate(c); err != nil {
		return fmt.Errorf("the inputs break the contract: %w", err)
	}
	return nil
}

// SuiteEntry renders c as a [[case]] of family literal named name
// (triage.SuiteEntryWriter): the whole configuration, the sizes and
// every input run-length encoded. An encoding beyond 1 MiB wraps
// triage.ErrNoSuiteEntry.
func (Kernel) SuiteEntry(c *difftest.Case, name string) (string, error) {
	in, err := load(c)
	if err != nil {
		return "", err
	}
	p := in.p
	var lists [6]string
	total := 0
	for i, k := range literalKinds {
		t := c.Inputs[i]
		v := make([]int64, t.Len())
		for j := range v {
			switch t.DType {
			case difftest.BF16:
				v[j] = int64(t.U16(j))
			case difftest.F32:
				v[j] = int64(t.U32(j))
			default:
				v[j] = t.I64(j)
			}
		}
		lists[i] = difftest.RunLength(v, k.digits)
		total += len(lists[i])
	}
	if total > maxLiteralChars {
		return "", fmt.Errorf("%w: the inputs take %d characters (limit %d): use the capture file", triage.ErrNoSuiteEntry, total, maxLiteralChars)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[[case]]\nkernel = %q\nfamily = %q\nname = %q\n[case.params]\n", KernelName, FamilyLiteral, name)
	fmt.Fprintf(&b, "norm = %q\nrope_offset = %d\nrope_style = %q\nhadamard = %v\nstore = %q\nscale_fmt = %q\neps = %s\nmodel = %q\n",
		p.Norm, p.RopeOffset, p.RopeStyle, p.Hadamard, p.Store, p.ScaleFmt, strconv.FormatFloat(float64(p.Eps), 'g', -1, 32), p.Model)
	if p.Intermediate != "" {
		fmt.Fprintf(&b, "intermediate = %q\n", p.Intermediate)
	}
	if p.Stages != "" {
		fmt.Fprintf(&b, "stages = %q\n", p.Stages)
	}
	fmt.Fprintf(&b, "P = %d\nnum_pages = %d\nN = %d\nx_stride = %d\nmax_pos = %d\n", p.PageSize, p.NumPages, in.n, in.stride, in.maxPos)
	for i, k := range literalKinds {
		fmt.Fprintf(&b, "%s = %q\n", k.name, lists[i])
	}
	return b.String(), nil
}
