package filekind

import (
	"io/fs"
	"testing"
)

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		m    fs.FileMode
		want string
	}{
		{fs.ModeDir | 0o755, "a folder"},
		{fs.ModeNamedPipe, "a FIFO"},
		{fs.ModeDevice | fs.ModeCharDevice, "a character device"},
		{fs.ModeDevice, "a block device"},
		{fs.ModeSocket, "a socket"},
		{fs.ModeIrregular, "a file of unknown type"},
		{fs.ModeSymlink, "not a regular file"},
	} {
		if got := Of(tc.m); got != tc.want {
			t.Errorf("Of(%v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
