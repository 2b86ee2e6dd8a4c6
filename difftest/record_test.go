package difftest

import (
	"testing"
	"time"
)

// TestFormatDuration: the unit changes at 1 ms and 1 s, with the
// decimals the tables print.
func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.0µs"},
		{1500 * time.Nanosecond, "1.5µs"},
		{999999 * time.Nanosecond, "1000.0µs"},
		{time.Millisecond, "1.00ms"},
		{3500 * time.Microsecond, "3.50ms"},
		{999 * time.Millisecond, "999.00ms"},
		{time.Second, "1.00s"},
		{1250 * time.Millisecond, "1.25s"},
		{90 * time.Second, "90.00s"},
	} {
		if got := FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
