package triage

import (
	"slices"
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
