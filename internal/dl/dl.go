// Package dl loads shared libraries with dlopen(3) and looks up their
// symbols: the one loader of package cuda (the driver library,
// libcuda.so.1) and of bridge (a bring-your-own adapter library).
package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

// kd_dlopen dlopens path (RTLD_NOW: every symbol resolved now) or returns
// NULL with dlerror's text in err.
static void *kd_dlopen(const char *path, char *err, size_t errlen) {
	dlerror();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, errlen, "%s", e ? e : "dlopen failed");
	}
	return h;
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Open dlopens the library at path (a soname searched as dlopen(3) does,
// or a file path) with RTLD_NOW | RTLD_LOCAL: every undefined symbol is
// resolved now, and none is made available to later loads. It returns the
// library's handle, or an error whose text is dlerror's ("dlopen failed"
// when dlerror has none, cut at 511 bytes). The library is never unloaded
// by this package.
func Open(path string) (unsafe.Pointer, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var errbuf [512]C.char
	h := C.kd_dlopen(cpath, &errbuf[0], C.size_t(len(errbuf)))
	if h == nil {
		return nil, errors.New(C.GoString(&errbuf[0]))
	}
	return h, nil
}

// Sym returns the address of the symbol name in the library handle h (from
// Open), or nil when the library does not define it.
func Sym(h unsafe.Pointer, name string) unsafe.Pointer {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return C.dlsym(h, cname)
}
