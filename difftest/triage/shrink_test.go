package triage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

// shrinkKernel is the fake kernel with a Reducer: drop any one element of
// x (with its out_loc), in order.
type shrinkKernel struct{ fakekernel.Kernel }

func (shrinkKernel) SizeOf(c *difftest.Case) string {
	return fmt.Sprintf("%d elements", c.Input("x").Len())
}

func (shrinkKernel) Reductions(c *difftest.Case) []Reduction {
	x, loc := c.Input("x"), c.Input("out_loc")
	var rs []Reduction
	for i := 0; i < x.Len(); i++ {
		rs = append(rs, Reduction{What: fmt.Sprintf("drop %d", i), Key: "drop", Build: func() (*difftest.Case, error) {
			var xs []int32
			var ls []int64
			for j := 0; j < x.Len(); j++ {
				if j != i {
					xs, ls = append(xs, x.I32(j)), append(ls, loc.I64(j))
				}
			}
			if len(xs) == 0 {
				return nil, errors.New("empty")
			}
			return fakekernel.NewCase("s", xs, ls, c.Params.(fakekernel.Params).Slots), nil
		}})
	}
	return rs
}

func TestShrinkFake(t *testing.T) {
	k := shrinkKernel{}
	_, m, _ := difftest.FindMutant("fake-off-by-one")
	impl := difftest.MutantImpl{Kernel: fakekernel.Name, Mutant: m}
	c := fakekernel.NewCase("s", []int32{1, 2, 3, 4, 5, 6}, []int64{0, 1, 2, 3, 4, -1}, 8)
	var log []string
	res, err := Shrink(context.Background(), k, c, ShrinkConfig{Impl: impl, Log: func(l string) { log = append(log, l) }})
	if err != nil {
		t.Fatal(err)
	}
	// Any one element fails off-by-one (the last is one too large): one is left.
	if n := res.Shrunk.Input("x").Len(); n != 1 || res.ShrunkSize != "1 elements" || res.OriginalSize != "6 elements" {
		t.Errorf("shrunk to %d (%s), from %s", n, res.ShrunkSize, res.OriginalSize)
	}
	if res.Class != difftest.Mismatch || res.Record.Class != difftest.Mismatch || !slices.Equal(res.FinalDiagnosis, []string{"fake-off-by-one"}) || res.Note != "" {
		t.Errorf("class %s/%s, diagnosis %v, note %q", res.Class, res.Record.Class, res.FinalDiagnosis, res.Note)
	}
	if len(res.Steps) != 5 || res.Attempts != 5 || !strings.Contains(strings.Join(log, "\n"), "kept   drop 0: 5 elements") {
		t.Errorf("%d steps, %d attempts, log:\n%s", len(res.Steps), res.Attempts, strings.Join(log, "\n"))
	}
	// Enough stops at once.
	res, err = Shrink(context.Background(), k, c, ShrinkConfig{Impl: impl, Enough: func(c *difftest.Case) bool { return c.Input("x").Len() <= 4 }})
	if err != nil || res.Shrunk.Input("x").Len() != 4 || res.Note != "small enough" {
		t.Errorf("Enough: %v, %s, %q", err, res.ShrunkSize, res.Note)
	}
	// A stopped shrink returns what it has.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	res, err = Shrink(ctx, k, c, ShrinkConfig{Impl: impl, Log: func(l string) {
		if strings.HasPrefix(l, "  kept ") {
			if n++; n == 2 {
				cancel()
			}
		}
	}})
	if err != nil || res.Shrunk.Input("x").Len() != 4 || !strings.HasPrefix(res.Note, "stopped") {
		t.Errorf("stopped: %v, %v, %q", err, res.ShrunkSize, res.Note)
	}
	// A passing case has nothing to shrink; a kernel without a Reducer cannot.
	if _, err := Shrink(context.Background(), k, c, ShrinkConfig{Impl: difftest.ReferenceImpl{}}); !errors.Is(err, ErrShrinkPasses) {
		t.Errorf("reference: %v", err)
	}
	if _, err := Shrink(context.Background(), fakekernel.Kernel{}, c, ShrinkConfig{Impl: impl}); !errors.Is(err, ErrNoReducer) {
		t.Errorf("no reducer: %v", err)
	}
}

func TestResumeAt(t *testing.T) {
	list := []Reduction{{Key: "a"}, {Key: "b"}, {Key: "b"}, {Key: "b"}, {Key: "c"}}
	for _, tc := range []struct {
		key       string
		ord, want int
	}{{"", 0, 0}, {"b", 0, 1}, {"b", 2, 3}, {"b", 7, 3}, {"gone", 0, 0}, {"c", 0, 4}} {
		if got := resumeAt(list, tc.key, tc.ord); got != tc.want {
			t.Errorf("resumeAt(%q, %d) = %d, want %d", tc.key, tc.ord, got, tc.want)
		}
	}
	if ordinal(list, 3) != 2 || ordinal(list, 4) != 0 {
		t.Errorf("ordinal")
	}
}
