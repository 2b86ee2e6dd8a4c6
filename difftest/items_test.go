// Tests of the lazy item expansion (Suite.Select; issue 9 items 4 and 10).

package difftest

import (
	"fmt"
	"math"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

func namedSuite(n int) *Suite {
	s := &Suite{Name: "s"}
	for i := 0; i < n; i++ {
		s.Cases = append(s.Cases, SuiteCase{Spec: CaseSpec{Kernel: "k", Name: fmt.Sprintf("c%d", i)}})
	}
	return s
}

// TestSelectHugeRepeat: --repeat 100000000 of a 275-case suite builds no
// list: Len is known at once, the first items come at once, and neither
// costs more than a few KB.
func TestSelectHugeRepeat(t *testing.T) {
	s := namedSuite(275)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	q, err := s.Select(Selection{Seed: 7, Repeat: 100_000_000})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Len(); got != 27_500_000_000 {
		t.Errorf("Len = %d, want 27500000000", got)
	}
	var got []string
	for it := range q.All() {
		got = append(got, fmt.Sprintf("%d:%d:%s", it.Index, it.Seed, it.Spec.Name))
		if len(got) == 277 {
			break
		}
	}
	runtime.ReadMemStats(&after)
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v", d)
	}
	if a := after.TotalAlloc - before.TotalAlloc; a > 1<<20 {
		t.Errorf("allocated %d bytes, want no list", a)
	}
	if got[0] != "0:7:c0" || got[274] != "274:7:c274" || got[275] != "275:8:c0" || got[276] != "276:8:c1" {
		t.Errorf("items %v … %v", got[:2], got[274:])
	}
	// A shard of the huge run: its Len is computed, its first item found
	// by stepping N, not by walking the run.
	q, err = s.Select(Selection{Seed: 7, Repeat: 100_000_000, Shard: Shard{I: 999_999_999, N: 1_000_000_000}})
	if err != nil {
		t.Fatal(err)
	}
	if got := q.Len(); got != 27 {
		t.Errorf("shard Len = %d, want 27 (27.5e9 indices, one in 1e9 from 999999999)", got)
	}
	n := 0
	for it := range q.All() {
		if n == 0 && (it.Index != 999_999_999 || it.Seed != 7+999_999_999/275 || it.Spec.Name != fmt.Sprintf("c%d", 999_999_999%275)) {
			t.Errorf("first item of the shard: index %d seed %d case %s", it.Index, it.Seed, it.Spec.Name)
		}
		n++
	}
	if n != 27 {
		t.Errorf("shard yields %d items, Len says 27", n)
	}
}

// TestSelectMatchesExpansion: Len and All agree with the plain expansion
// (every seed, every case, then --run and --shard) on many small shapes.
func TestSelectMatchesExpansion(t *testing.T) {
	for _, n := range []int{1, 2, 3, 6, 7} {
		s := namedSuite(n)
		for _, repeat := range []int{1, 2, 5, 12} {
			for _, run := range []string{"", "c[02468]", "c1$", "none"} {
				for N := 0; N <= 9; N++ {
					for I := 0; I < max(N, 1); I++ {
						sel := Selection{Seed: 100, Repeat: repeat, Shard: Shard{I: I, N: N}}
						if run != "" {
							sel.Run = regexp.MustCompile(run)
						}
						var want []string
						for r := 0; r < repeat; r++ {
							for i, sc := range s.Cases {
								idx := r*n + i
								if (sel.Run == nil || sel.Run.MatchString(sc.Spec.ID())) && (N == 0 || idx%N == I) {
									want = append(want, fmt.Sprintf("%d:%d:%s", idx, 100+r, sc.Spec.Name))
								}
							}
						}
						q, err := s.Select(sel)
						if err != nil {
							t.Fatal(err)
						}
						var got []string
						for it := range q.All() {
							got = append(got, fmt.Sprintf("%d:%d:%s", it.Index, it.Seed, it.Spec.Name))
						}
						where := fmt.Sprintf("n=%d repeat=%d run=%q shard %d/%d", n, repeat, run, I, N)
						if strings.Join(got, " ") != strings.Join(want, " ") {
							t.Fatalf("%s: All = %v, want %v", where, got, want)
						}
						if q.Len() != len(want) {
							t.Fatalf("%s: Len = %d, want %d", where, q.Len(), len(want))
						}
						if items := s.Items(sel); len(items) != len(want) {
							t.Fatalf("%s: Items has %d, want %d", where, len(items), len(want))
						}
					}
				}
			}
		}
	}
}

// TestSelectSeedsDoNotWrap: --seed 2^64−1 --repeat 2 would wrap to seed 0;
// it is an error naming both flags and the rule. The last seed alone runs.
func TestSelectSeedsDoNotWrap(t *testing.T) {
	s := namedSuite(3)
	_, err := s.Select(Selection{Seed: math.MaxUint64, Repeat: 2})
	want := "--seed 18446744073709551615 with --repeat 2 runs seeds up to 18446744073709551615 + 1, past the largest seed 18446744073709551615 (2^64−1); seeds are not wrapped round to 0: lower --seed or --repeat"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
	if s.Items(Selection{Seed: math.MaxUint64, Repeat: 2}) != nil {
		t.Error("Items returned items for a selection Select rejects")
	}
	q, err := s.Select(Selection{Seed: math.MaxUint64 - 1, Repeat: 2})
	if err != nil {
		t.Fatal(err)
	}
	var seeds []uint64
	for it := range q.All() {
		seeds = append(seeds, it.Seed)
	}
	if len(seeds) != 6 || seeds[0] != math.MaxUint64-1 || seeds[5] != math.MaxUint64 {
		t.Errorf("seeds %v, want 2^64−2 ×3 then 2^64−1 ×3", seeds)
	}
	if _, err := s.Select(Selection{Repeat: math.MaxInt/2 + 1}); err == nil || !strings.Contains(err.Error(), "is more than 9223372036854775807 items") {
		t.Errorf("repeat·cases past MaxInt: got %v", err)
	}
}
