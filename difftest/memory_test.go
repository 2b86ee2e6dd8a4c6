package difftest

import (
	"math"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1073741824": 1 << 30, "8G": 8 << 30, "8GiB": 8 << 30, "8gb": 8 << 30,
		"512M": 512 << 20, "1.5G": 3 << 29, "64 K": 64 << 10, "2T": 2 << 40, "100B": 100,
	} {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"": "want a size", "-1G": "must be ≥ 0", "8X": `unknown unit "X"`, "G": "want a size",
		"0x10": "want a size", "1e3": "want a size", "NaN": `unknown unit "NAN"`, "9000000000T": "beyond 2^63",
	} {
		if _, err := ParseBytes(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBytes(%q) error %v, want one containing %q", in, err, want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 594 << 20: "594 MiB",
		4 << 30: "4 GiB", 5046586573: "4.7 GiB", 123456789012: "115 GiB",
	} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// Bytes counts each input twice and each output four times, and
// saturates instead of overflowing; String names the largest parts first.
func TestFootprintBytes(t *testing.T) {
	f := Footprint{
		Inputs:  []Size{{"x", 1000}, {"w", 10}},
		Outputs: []Size{{"cache", 300}},
		Scratch: []Size{{"rows", 7}},
	}
	if got, want := f.Bytes(), int64(2*1010+4*300+7); got != want {
		t.Errorf("Bytes = %d, want %d", got, want)
	}
	if got, want := f.String(), "x 1000 B (input), cache 300 B (output), w 10 B (input), 1 more"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	huge := Footprint{Inputs: []Size{{"x", math.MaxInt64 / 2}, {"y", math.MaxInt64 / 2}}}
	if got := huge.Bytes(); got != math.MaxInt64 {
		t.Errorf("Bytes of a huge footprint = %d, want the saturated %d", got, int64(math.MaxInt64))
	}
	if got := TensorBytes(F32, 1<<40, 1<<40); got != math.MaxInt64 {
		t.Errorf("TensorBytes overflow = %d, want saturated", got)
	}
	if got := TensorBytes(BF16, 3, 0); got != 0 {
		t.Errorf("TensorBytes with a 0 dimension = %d", got)
	}
}
