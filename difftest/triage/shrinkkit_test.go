package triage

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func TestReductionsCloneChangeBuild(t *testing.T) {
	base := []int{3, 1, 2}
	r := NewReductions(base, slices.Clone[[]int], func(m []int) (*difftest.Case, error) {
		return &difftest.Case{ID: Span(0, len(m)), Params: m}, nil
	})
	r.Add("drop first", "drop/1", func(m []int) bool { m[0] = 0; return true })
	r.Add("nothing", "none", func([]int) bool { return false })
	rs := r.List()
	if len(rs) != 2 || rs[0].What != "drop first" || rs[0].Key != "drop/1" || rs[1].Key != "none" {
		t.Fatalf("list %+v", rs)
	}
	c, err := rs[0].Build()
	if err != nil || !slices.Equal(c.Params.([]int), []int{0, 1, 2}) || c.ID != "0–2" {
		t.Fatalf("built %+v, %v", c, err)
	}
	if !slices.Equal(base, []int{3, 1, 2}) {
		t.Fatalf("the base model changed: %v", base)
	}
	if _, err := rs[1].Build(); err == nil || err.Error() != "no change" {
		t.Fatalf("no-change proposal: %v", err)
	}
}

// Drops over 3 items proposes chunks of 2 and 1, never all 3, named and
// keyed by chunk size; each drops its chunk from a clone only.
func TestDrops(t *testing.T) {
	base := []int{10, 11, 12}
	clone := func(m *[]int) *[]int { c := slices.Clone(*m); return &c }
	build := func(m *[]int) (*difftest.Case, error) { return &difftest.Case{Params: *m}, nil }
	r := NewReductions(&base, clone, build)
	r.Drops(len(base), "rows", "rows", func(m *[]int, i, j int) { *m = slices.Delete(*m, i, j) })
	var got []string
	for _, rd := range r.List() {
		c, err := rd.Build()
		if err != nil {
			t.Fatalf("%s: %v", rd.What, err)
		}
		got = append(got, fmt.Sprintf("%s|%s|%v", rd.What, rd.Key, c.Params))
	}
	want := []string{
		"drop rows 0–1 of 3|rows/2|[12]",
		"drop rows 2 of 3|rows/2|[10 11]",
		"drop rows 0 of 3|rows/1|[11 12]",
		"drop rows 1 of 3|rows/1|[10 12]",
		"drop rows 2 of 3|rows/1|[10 11]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Drops(3):\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(base, []int{10, 11, 12}) {
		t.Errorf("the base model changed: %v", base)
	}
	r = NewReductions(&base, clone, build)
	r.Drops(1, "rows", "rows", func(*[]int, int, int) {})
	if n := len(r.List()); n != 0 {
		t.Errorf("Drops(1): %d proposals, want none (dropping the only item empties the case)", n)
	}
}

func TestSpanNextPow2(t *testing.T) {
	for _, c := range []struct {
		i, j int
		want string
	}{{4, 5, "4"}, {0, 64, "0–63"}, {7, 9, "7–8"}} {
		if got := Span(c.i, c.j); got != c.want {
			t.Errorf("Span(%d, %d) = %q, want %q", c.i, c.j, got, c.want)
		}
	}
	for n, want := range map[int]int{0: 1, 1: 1, 2: 2, 3: 4, 64: 64, 65: 128, 1000: 1024} {
		if got := NextPow2(n); got != want {
			t.Errorf("NextPow2(%d) = %d, want %d", n, got, want)
		}
	}
}

// A halving pass over 5 items cuts at sizes 3, 2, 1 (every chunk); with
// at most 3 chunks a level only sizes 3 and 2 remain; 0 items have none.
func TestHalving(t *testing.T) {
	for _, c := range []struct {
		n, maxChunks int
		want         string
	}{
		{5, 5, "3:[0,3) 3:[3,5) 2:[0,2) 2:[2,4) 2:[4,5) 1:[0,1) 1:[1,2) 1:[2,3) 1:[3,4) 1:[4,5)"},
		{5, 3, "3:[0,3) 3:[3,5) 2:[0,2) 2:[2,4) 2:[4,5)"},
		{1, 1, "1:[0,1)"},
		{0, 4, ""},
	} {
		var got []string
		Halving(c.n, c.maxChunks, func(s, i, j int) { got = append(got, fmt.Sprintf("%d:[%d,%d)", s, i, j)) })
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("Halving(%d, %d) = %q, want %q", c.n, c.maxChunks, g, c.want)
		}
	}
	if got := ChunkSizes(1000, 1000); !slices.Equal(got, []int{500, 250, 125, 63, 32, 16, 8, 4, 2, 1}) {
		t.Errorf("ChunkSizes(1000, 1000) = %v", got)
	}
}

// RankMap on integers (0 stays): the negatives −7, −2 become −2, −1 and
// the positives 3, 5, 100 become 1, 2, 3; with groups of two, −7 and −2
// share −1, 3 and 5 share 1, and 100 is 2. A map already of ranks is
// unchanged.
func TestRankMap(t *testing.T) {
	id := func(v int) int { return v }
	ordinary := func(v int) bool { return v != 0 }
	negative := func(v int) bool { return v < 0 }
	for _, c := range []struct {
		group int
		want  []int
	}{{1, []int{-2, 1, 0, 1, 3, -1, 2}}, {2, []int{-1, 1, 0, 1, 2, -1, 1}}} {
		v := []int{-7, 3, 0, 3, 100, -2, 5}
		if !RankMap(v, c.group, ordinary, negative, id, id) || !slices.Equal(v, c.want) {
			t.Errorf("group %d: %v, want %v (changed)", c.group, v, c.want)
		}
		if RankMap(v, 1, ordinary, negative, id, id) {
			t.Errorf("group %d: renumbering the ranks %v changed them", c.group, v)
		}
	}
}
