package kerneltest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/triage"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
	"github.com/kerneldiff/kerneldiff/internal/tbrecord"
)

var fake = fakekernel.Kernel{}

// rampSpec is fake_scatter's ramp family with n = 4: x = 1, 2, 3, 4 into
// slots 0, 1, 2 (the last element has out_loc −1) of a 4-slot cache.
var rampSpec = difftest.CaseSpec{Kernel: fakekernel.Name, Family: "ramp", Name: "ramp-4", Params: map[string]any{"n": int64(4)}}

// Draw draws and validates; a spec the kernel rejects, or a drawn case
// Validate rejects, fails with the spec's ID.
func TestDraw(t *testing.T) {
	c := Draw(t, fake, rampSpec, 1)
	if c.Input("x").I32(3) != 4 || c.Input("out_loc").I64(3) != -1 || c.Seed != 1 {
		t.Errorf("drawn x[3] = %d, out_loc[3] = %d, seed %d; want 4, −1, 1", c.Input("x").I32(3), c.Input("out_loc").I64(3), c.Seed)
	}
	bad := rampSpec
	bad.Params = map[string]any{"n": int64(4), "invalid": true}
	r := tbrecord.Run(t, func(tb testing.TB) { Draw(tb, fake, bad, 1) })
	if !r.Stopped || len(r.Errs) != 1 || !strings.HasPrefix(r.Errs[0], bad.ID()+": ") || !strings.Contains(r.Errs[0], "out_loc") {
		t.Errorf("invalid draw: %q (fatal %v)", r.Errs, r.Stopped)
	}
}

// Judge on the ramp case: the reference passes; writing the unused last
// cache slot (a byte outside Written) fails as a canary before Check; an
// extra check's message comes next; a wrong y is Check's mismatch.
func TestJudge(t *testing.T) {
	c := Draw(t, fake, rampSpec, 1)
	want := Reference(t, fake, c)
	if got := want[1].I32(2); got != 3 {
		t.Fatalf("reference cache slot 2 = %d, want 3", got)
	}
	if w := want[1].Data[12:16]; !slices.Equal(w, []byte{0xA5, 0xA5, 0xA5, 0xA5}) {
		t.Fatalf("reference's unwritten slot 3 = % x, want the poison a5", w)
	}
	ref := func(o []*difftest.Tensor) error { return fake.Reference(c, o) }
	if failed, why := Judge(t, fake, c, want, ref); failed {
		t.Errorf("reference: %s", why)
	}
	writeNeg := Mutant(t, fake, "fake-write-negative")
	failed, why := Judge(t, fake, c, want, func(o []*difftest.Tensor) error { return writeNeg.Run(c, o) })
	if wantWhy := "canary: cache: byte 12 is outside what the contract writes but changed (0x04, want canary 0xa5)"; !failed || why != wantWhy {
		t.Errorf("write-negative: %v %q, want %q", failed, why, wantWhy)
	}
	extra := func(got []*difftest.Tensor) string { return fmt.Sprintf("y[0] is %d", got[0].I32(0)) }
	if failed, why := Judge(t, fake, c, want, ref, extra); !failed || why != "y[0] is 1" {
		t.Errorf("extra check: %v %q", failed, why)
	}
	offByOne := Mutant(t, fake, "fake-off-by-one")
	failed, why = Judge(t, fake, c, want, func(o []*difftest.Tensor) error { return offByOne.Run(c, o) })
	if wantWhy := "mismatch: y[3]: got 5, want 4"; !failed || why != wantWhy {
		t.Errorf("off-by-one: %v %q, want %q", failed, why, wantWhy)
	}
	if got := RunMutant(t, fake, c, "fake-off-by-one"); got[0].I32(3) != 5 || got[1].I32(2) != 3 {
		t.Errorf("off-by-one wrote y[3] = %d, cache slot 2 = %d; want 5, 3", got[0].I32(3), got[1].I32(2))
	}
	r := tbrecord.Run(t, func(tb testing.TB) { Mutant(tb, fake, "fake-none") })
	if !r.Stopped || !slices.Equal(r.Errs, []string{"fake_scatter has no mutant fake-none"}) {
		t.Errorf("unknown mutant: %q", r.Errs)
	}
}

// CatchMutants: the ramp case catches all three fake mutants; a mutant
// that runs the reference is reported as not caught, naming the suite.
func TestCatchMutants(t *testing.T) {
	specs := []difftest.CaseSpec{rampSpec}
	CatchMutants(t, fake, "ramp", specs, 1, fake.Mutants(), nil)
	same := difftest.Mutant{Name: "fake-same", Run: fake.Reference}
	r := tbrecord.Run(t, func(tb testing.TB) { CatchMutants(tb, fake, "ramp", specs, 1, append(fake.Mutants(), same), nil) })
	if !slices.Equal(r.Errs, []string{"mutant fake-same is not caught by suite ramp"}) {
		t.Errorf("errors %q", r.Errs)
	}
	// A judgement that fails the reference is reported for every case.
	never := func(*difftest.Case, []*difftest.Tensor, func([]*difftest.Tensor) error) (bool, string) {
		return true, "never"
	}
	r = tbrecord.Run(t, func(tb testing.TB) { CatchMutants(tb, fake, "ramp", specs, 1, nil, never) })
	if !slices.Equal(r.Errs, []string{"fake_scatter/ramp-4: reference fails its own check: never"}) {
		t.Errorf("errors %q", r.Errs)
	}
}

// Captured holds the params as JSON and the inputs by name; RoundTrip
// rebuilds the case with the same inputs and params.
func TestRoundTrip(t *testing.T) {
	c := Draw(t, fake, rampSpec, 1)
	raw, tensors := Captured(t, c)
	if string(raw) != `{"n":4,"slots":4}` || len(tensors) != 2 || tensors["x"] != c.Input("x") || tensors["out_loc"] != c.Input("out_loc") {
		t.Errorf("captured %s, %v", raw, tensors)
	}
	r := RoundTrip(t, fake, c)
	if r.ID != c.ID || r.Params != c.Params || difftest.InputDigest(r) != difftest.InputDigest(c) {
		t.Errorf("round trip: %s %+v, want %s %+v, same inputs", r.ID, r.Params, c.ID, c.Params)
	}
}

// FirstFailing and CheckShrunk with the off-by-one mutant: the ramp case
// fails; a "shrink" that kept it passes every check but the suite entry
// (fake_scatter writes none); a shrunk record of another class is named.
func TestShrinkChecks(t *testing.T) {
	impl := difftest.MutantImpl{Kernel: fakekernel.Name, Mutant: Mutant(t, fake, "fake-off-by-one")}
	c, rec := FirstFailing(t, fake, impl, []difftest.CaseSpec{rampSpec})
	if c.ID != rampSpec.ID() || rec.Class != difftest.Mismatch {
		t.Fatalf("first failing %s %s", c.ID, rec.Class)
	}
	_, out := RunCase(t, fake, impl, c)
	res := &triage.ShrinkResult{Original: c, Shrunk: c, Record: rec, Outcome: out}
	r := tbrecord.Run(t, func(tb testing.TB) { CheckShrunk(tb, fake, impl, rec, res) })
	if len(r.Errs) != 1 || !strings.HasPrefix(r.Errs[0], "suite entry: ") || !strings.Contains(r.Errs[0], triage.ErrNoSuiteEntry.Error()) {
		t.Errorf("errors %q, want the suite entry's alone", r.Errs)
	}
	other := *rec
	other.Class = difftest.Guard
	r = tbrecord.Run(t, func(tb testing.TB) { CheckShrunk(tb, fake, impl, &other, res) })
	if len(r.Errs) != 2 || r.Errs[0] != "shrunk case: fail mismatch, the original guard" {
		t.Errorf("errors %q", r.Errs)
	}
	pass := difftest.MutantImpl{Kernel: fakekernel.Name, Mutant: difftest.Mutant{Name: "fake-same", Run: fake.Reference}}
	r = tbrecord.Run(t, func(tb testing.TB) { FirstFailing(tb, fake, pass, []difftest.CaseSpec{rampSpec}) })
	if !r.Stopped || !slices.Equal(r.Errs, []string{"mutant:fake-same passes every case"}) {
		t.Errorf("errors %q", r.Errs)
	}
}

// specChecking is fake_scatter with a CheckSpec: NewCase's answer, or with
// lax, nil whatever the spec.
type specChecking struct {
	fakekernel.Kernel
	lax bool
}

func (k specChecking) CheckSpec(spec difftest.CaseSpec) error {
	if k.lax {
		return nil
	}
	_, err := k.NewCase(spec, 1, 1)
	return err
}

// CheckSpecAgrees returns CheckSpec's answer when it is NewCase's, and
// names the spec where they differ; SuiteEntry stops at a kernel that
// writes no suite entry.
func TestCheckSpecAgreesSuiteEntry(t *testing.T) {
	bad := difftest.CaseSpec{Kernel: fakekernel.Name, Family: "ramp", Name: "big", Params: map[string]any{"n": int64(1 << 21)}}
	wantErr := "case fake_scatter/big: n 2097152 and slots 2097152 must be in [0, 2^20]"
	if err := CheckSpecAgrees(t, specChecking{}, bad); err == nil || err.Error() != wantErr {
		t.Errorf("agreeing CheckSpec returned %v, want %q", err, wantErr)
	}
	if err := CheckSpecAgrees(t, specChecking{}, rampSpec); err != nil {
		t.Errorf("a valid spec: %v", err)
	}
	r := tbrecord.Run(t, func(tb testing.TB) { CheckSpecAgrees(tb, specChecking{lax: true}, bad) })
	if len(r.Errs) != 1 || r.Errs[0] != "fake_scatter/big map[n:2097152]: CheckSpec <nil>, NewCase "+wantErr {
		t.Errorf("disagreeing CheckSpec: %q", r.Errs)
	}
	c := Draw(t, fake, rampSpec, 1)
	r = tbrecord.Run(t, func(tb testing.TB) { SuiteEntry(tb, specChecking{}, c, "e") })
	if !r.Stopped || len(r.Errs) != 1 || !strings.Contains(r.Errs[0], triage.ErrNoSuiteEntry.Error()) {
		t.Errorf("no suite entry writer: %q", r.Errs)
	}
}
