package registry

import (
	"slices"
	"testing"
)

// TestTable: values come back by name and in name order, whatever the
// order of Add; a second Add of one name panics naming the kind and the
// name, and leaves the first value.
func TestTable(t *testing.T) {
	tab := Table[int]{Kind: "test: number"}
	if _, ok := tab.Get("one"); ok {
		t.Fatal("an empty table found one")
	}
	if n := tab.Names(); len(n) != 0 {
		t.Fatalf("empty table: names %q", n)
	}
	tab.Add("two", 2)
	tab.Add("three", 3)
	tab.Add("one", 1)
	if v, ok := tab.Get("three"); !ok || v != 3 {
		t.Errorf("Get(three) = %d, %v; want 3, true", v, ok)
	}
	if got := tab.Names(); !slices.Equal(got, []string{"one", "three", "two"}) {
		t.Errorf("Names() = %q", got)
	}
	if got := tab.Values(); !slices.Equal(got, []int{1, 3, 2}) {
		t.Errorf("Values() = %v, want [1 3 2]", got)
	}
	func() {
		defer func() {
			if r := recover(); r != "test: number registered twice: two" {
				t.Errorf("second Add: recovered %v", r)
			}
		}()
		tab.Add("two", 22)
	}()
	if v, _ := tab.Get("two"); v != 2 {
		t.Errorf("after the refused Add, two = %d, want 2", v)
	}
}
