package difftest_test

import (
	"slices"
	"strings"
	"testing"

	. "github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/internal/fakekernel"
)

// unspecifiedHead is fake_scatter with the cache's first slot (bytes
// 0–3) unspecified, as a kernel that may write scratch there.
type unspecifiedHead struct{ fakekernel.Kernel }

func (unspecifiedHead) Unspecified(c *Case) [][]Range { return [][]Range{nil, {{Off: 0, Len: 4}}} }

// unspecifiedShort lists one output where the case has two.
type unspecifiedShort struct{ fakekernel.Kernel }

func (unspecifiedShort) Unspecified(c *Case) [][]Range { return [][]Range{nil} }

// Untouched on a hand case: x = [1, 2] into slots 2 and none of a 4-slot
// cache writes y whole (8 bytes) and cache bytes 8–11, so the untouched
// cache bytes are 0–7 and 12–15; an unspecified first slot takes 0–3 off
// them; a wrong-length Unspecified is an error naming it.
func TestUntouched(t *testing.T) {
	c := fakekernel.NewCase("untouched", []int32{1, 2}, []int64{2, -1}, 4)
	written, untouched, err := Untouched(fakekernel.Kernel{}, c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Range{{Off: 8, Len: 4}}; !slices.Equal(written[1], want) {
		t.Errorf("written cache %v, want %v", written[1], want)
	}
	if len(untouched[0]) != 0 {
		t.Errorf("untouched y %v, want none", untouched[0])
	}
	if want := []Range{{Off: 0, Len: 8}, {Off: 12, Len: 4}}; !slices.Equal(untouched[1], want) {
		t.Errorf("untouched cache %v, want %v", untouched[1], want)
	}
	_, untouched, err = Untouched(unspecifiedHead{}, c)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Range{{Off: 4, Len: 4}, {Off: 12, Len: 4}}; !slices.Equal(untouched[1], want) {
		t.Errorf("untouched cache with the first slot unspecified %v, want %v", untouched[1], want)
	}
	if _, _, err := Untouched(unspecifiedShort{}, c); err == nil || !strings.Contains(err.Error(), "Unspecified lists 1 outputs, the case has 2") {
		t.Errorf("short Unspecified: %v", err)
	}
}
