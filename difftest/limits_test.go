package difftest

import (
	"errors"
	"testing"
)

// NonNegative and WithinLimits name the first size that breaks its rule,
// as an *InputError wrapping ErrInvalidInput.
func TestLimits(t *testing.T) {
	if err := NonNegative(Size{Name: "batch", V: 0}, Size{Name: "stride", V: 5}); err != nil {
		t.Errorf("sizes ≥ 0: %v", err)
	}
	err := NonNegative(Size{Name: "batch", V: 2}, Size{Name: "stride", V: -1}, Size{Name: "max_pages", V: -2})
	var ie *InputError
	if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidInput) || err.Error() != "invalid input: stride: must be ≥ 0, got -1" {
		t.Errorf("negative stride: %v", err)
	}
	limits := []Limit{AtMost("batch", 4, 4, "rows"), AtMost("batch·stride", 4*300, 1024, "scores"), AtMost("stride", 300, 100, "scores per row")}
	if err := WithinLimits(limits[0]); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	if err := WithinLimits(limits...); err == nil || err.Error() != "invalid input: batch·stride: exceeds the limit of 1024 scores: got 1200" {
		t.Errorf("over: %v", err)
	}
}
