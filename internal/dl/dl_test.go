package dl

import (
	"path/filepath"
	"strings"
	"testing"
)

// Open and Sym on the C library every cgo binary links: a defined symbol
// has an address, an undefined one is nil.
func TestOpenSym(t *testing.T) {
	h, err := Open("libc.so.6")
	if err != nil {
		t.Fatalf("Open(libc.so.6): %v", err)
	}
	if h == nil {
		t.Fatal("Open(libc.so.6) returned a nil handle and no error")
	}
	if Sym(h, "strlen") == nil {
		t.Error("Sym(strlen) is nil")
	}
	if p := Sym(h, "kd_no_such_symbol"); p != nil {
		t.Errorf("Sym(kd_no_such_symbol) = %p, want nil", p)
	}
}

// A failed Open returns dlerror's text, which names the path.
func TestOpenMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "libmissing.so")
	h, err := Open(path)
	if err == nil || h != nil {
		t.Fatalf("Open(%s) = %p, %v; want nil and an error", path, h, err)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "No such file") {
		t.Errorf("error %q does not carry dlerror's text (the path, No such file)", err)
	}
}
