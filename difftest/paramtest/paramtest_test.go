package paramtest

import (
	"slices"
	"testing"
)

func TestSourceParamKeys(t *testing.T) {
	got, err := SourceParamKeys("testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	// "N" once although read twice; "skip" is not a reader's key; the
	// non-literal key and the _test.go file's key are not seen.
	want := []string{"N", "preset", "runs"}
	if !slices.Equal(got, want) {
		t.Errorf("SourceParamKeys = %q, want %q", got, want)
	}
}

func TestSourceParamKeysMissingDir(t *testing.T) {
	got, err := SourceParamKeys("testdata/none")
	if err != nil || len(got) != 0 {
		t.Errorf("SourceParamKeys(missing dir) = %q, %v; want no keys, no error", got, err)
	}
}
