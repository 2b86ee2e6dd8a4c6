// Suites as the runner sees them (Suite, SuiteCase, Item, Selection,
// Shard, SuiteError; loading and parsing is difftest/suite) and the items
// of a run, generated as they run: a suite expanded over
// --repeat seeds, filtered by --run and --shard, is never built as a list
// (--repeat 100000000 of a 275-case suite is 2.75·10^10 items).

package difftest

import (
	"fmt"
	"iter"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

// ItemSource is the items of a run in order, produced as they are
// consumed. Len is their number, known before the first is produced (for
// progress and for "no case matches").
type ItemSource interface {
	Len() int
	All() iter.Seq[Item]
}

// ItemList is an ItemSource over items already built (replay's one
// captured case, tests).
type ItemList []Item

// Len returns len(l).
func (l ItemList) Len() int { return len(l) }

// All yields the items in order.
func (l ItemList) All() iter.Seq[Item] {
	return func(yield func(Item) bool) {
		for _, it := range l {
			if !yield(it) {
				return
			}
		}
	}
}

// Selected is the lazily expanded selection of a suite (Suite.Select):
// items in seed-major, then suite order, Index = (seed − first seed) ·
// len(cases) + case position, kept when the case id matches --run and
// Index ≡ I (mod N) for --shard I/N. It holds the matching case positions
// only; Len is computed, not counted, and All produces one item at a time.
type Selected struct {
	cases   []SuiteCase
	sel     Selection
	repeat  int
	match   []bool // by case position: the id matches --run
	matched []int  // the matching positions, ascending
	total   int    // repeat · len(cases): the indices of the expanded suite
	n       int
}

// Select expands the suite over the seeds of sel and applies --run and
// --shard, lazily. It is an error when the seeds Seed … Seed+Repeat−1 do
// not fit in a uint64 (they are never wrapped round to 0), or when
// Repeat · len(cases) does not fit in an int (the item index).
func (s *Suite) Select(sel Selection) (*Selected, error) {
	repeat := max(sel.Repeat, 1)
	if uint64(repeat-1) > math.MaxUint64-sel.Seed {
		return nil, fmt.Errorf("--seed %d with --repeat %d runs seeds up to %d + %d, past the largest seed %d (2^64−1); seeds are not wrapped round to 0: lower --seed or --repeat",
			sel.Seed, repeat, sel.Seed, repeat-1, uint64(math.MaxUint64))
	}
	n := len(s.Cases)
	if n > 0 && repeat > math.MaxInt/n {
		return nil, fmt.Errorf("--repeat %d of the %d cases of suite %s is more than %d items", repeat, n, s.Name, math.MaxInt)
	}
	q := &Selected{cases: s.Cases, sel: sel, repeat: repeat, match: make([]bool, n), total: repeat * n, n: n}
	for i, sc := range s.Cases {
		if sel.Run == nil || sel.Run.MatchString(sc.Spec.ID()) {
			q.match[i] = true
			q.matched = append(q.matched, i)
		}
	}
	return q, nil
}

// shard returns I and N of the selection's shard, N = 1 for none.
func (q *Selected) shard() (int, int) {
	if q.sel.Shard.N == 0 {
		return 0, 1
	}
	return q.sel.Shard.I, q.sel.Shard.N
}

// Len returns the number of items All produces, computed from the
// matching case positions: for each position i, the seeds r in
// [0, repeat) with r·len(cases) + i ≡ I (mod N).
func (q *Selected) Len() int {
	I, N := q.shard()
	if N == 1 {
		return q.repeat * len(q.matched)
	}
	count := 0
	for _, i := range q.matched {
		count += congruentCount(q.n, ((I-i)%N+N)%N, N, q.repeat)
	}
	return count
}

// congruentCount counts r in [0, R) with r·a ≡ b (mod m), for m ≥ 1 and
// 0 ≤ b < m: with g = gcd(a, m) there is none unless g divides b, and
// otherwise exactly the r ≡ r0 (mod m/g) where r0 = (b/g)·(a/g)^−1 mod m/g.
func congruentCount(a, b, m, R int) int {
	A, B, M := big.NewInt(int64(a)), big.NewInt(int64(b)), big.NewInt(int64(m))
	g := new(big.Int).GCD(nil, nil, A, M)
	if new(big.Int).Mod(B, g).Sign() != 0 {
		return 0
	}
	step := new(big.Int).Div(M, g)
	r0 := big.NewInt(0)
	if step.Cmp(big.NewInt(1)) > 0 {
		inv := new(big.Int).ModInverse(new(big.Int).Div(A, g), step)
		r0.Mul(new(big.Int).Div(B, g), inv).Mod(r0, step)
	}
	if r0.Int64() >= int64(R) {
		return 0
	}
	return int((int64(R)-1-r0.Int64())/step.Int64()) + 1
}

// All yields the items in order, drawing nothing: each Item names its
// suite case and seed, and GenerateCase draws it when it runs. It steps
// through the shard's indices I, I+N, … and skips the cases --run leaves
// out, so a shard of a huge run costs its own items, not the whole run's.
func (q *Selected) All() iter.Seq[Item] {
	return func(yield func(Item) bool) {
		I, N := q.shard()
		for idx := I; idx < q.total; {
			if i := idx % q.n; q.match[i] {
				r := idx / q.n
				if !yield(Item{Index: idx, Seed: q.sel.Seed + uint64(r), SuiteCase: q.cases[i]}) {
					return
				}
			}
			if N > q.total-idx {
				return
			}
			idx += N
		}
	}
}

// SuiteError is a problem with a suite file: malformed TOML, an unknown
// key, kernel or family, a duplicate case, or a case whose parameters the
// kernel rejects. The CLI exits 2 on it. Error() is one line naming the
// file, the case (when known) and the problem.
type SuiteError struct {
	File string
	Case string // case id, or "" for a whole-file problem
	Err  error
}

// Error returns one line: "suite FILE: case ID: problem".
func (e *SuiteError) Error() string {
	msg := strings.ReplaceAll(e.Err.Error(), "\n", " ")
	if e.Case == "" {
		return fmt.Sprintf("suite %s: %s", e.File, msg)
	}
	// Kernel and Params errors name the case themselves; say it once.
	msg = strings.TrimPrefix(msg, "case "+e.Case+": ")
	return fmt.Sprintf("suite %s: case %s: %s", e.File, e.Case, msg)
}

// Unwrap returns the underlying error.
func (e *SuiteError) Unwrap() error { return e.Err }

// SuiteCase is one case of a loaded suite and the file it came from.
type SuiteCase struct {
	Spec CaseSpec
	File string
	// Capture, when set, is a capture file the case is read from as it
	// runs (a suite that is a folder of captures, suite.LoadCaptureDir) instead
	// of being drawn from (seed, Spec).
	Capture string
}

// Suite is an ordered, validated list of cases.
type Suite struct {
	Name  string // suite name, or the file path for --suite FILE
	Cases []SuiteCase
}

// Item is one case to run: a suite case under one seed.
type Item struct {
	Index int // position in the expanded suite: (seed−first seed)·len(cases) + case position
	Seed  uint64
	SuiteCase
	// Case, when set, is run as it is instead of being drawn from
	// (Seed, Spec): a case read back from a capture file (replay).
	Case *Case
}

// Selection picks the items of a run.
type Selection struct {
	Seed   uint64         // first seed (--seed)
	Repeat int            // seeds Seed … Seed+Repeat−1 (--repeat); < 1 means 1
	Run    *regexp.Regexp // matched against the case id (--run); nil = all
	Shard  Shard          // --shard
}

// Shard is a deterministic split of a run: shard I of N keeps the items
// whose Index ≡ I (mod N). I is 0-based: shards of a 4-way split are
// 0/4 … 3/4. The zero Shard keeps everything.
type Shard struct{ I, N int }

// ParseShard parses "I/N" with 0 ≤ I < N.
func ParseShard(s string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &sh.I, &sh.N); err != nil || fmt.Sprintf("%d/%d", sh.I, sh.N) != s {
		return Shard{}, fmt.Errorf("--shard %q: want I/N, e.g. 0/4", s)
	}
	if sh.N < 1 || sh.I < 0 || sh.I >= sh.N {
		return Shard{}, fmt.Errorf("--shard %q: want 0 ≤ I < N", s)
	}
	return sh, nil
}

// String returns "I/N", or "" for the zero Shard.
func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Items is Select(sel) collected into a slice, for tests and tools that
// run a few cases; a run uses Select, which builds no list. It returns nil
// when Select reports an error (seeds past 2^64−1, too many items).
func (s *Suite) Items(sel Selection) []Item {
	q, err := s.Select(sel)
	if err != nil {
		return nil
	}
	return slices.Collect(q.All())
}
