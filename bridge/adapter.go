// The worker's side of a bring-your-own CUDA source (docs/byo.md): it
// dlopens (internal/dl) the adapter library cudasrc.go built and calls its
// kd_adapter_<contract> functions (kernels/kd_adapter.h) in place of a
// fatbin entry point.

package bridge

/*
#include <stdlib.h>

// The functions of an adapter library: kd_adapter_<contract> (the user's),
// and kd_adapter_params_size, kd_adapter_synchronize, kd_adapter_error_name
// (kernels/kd_adapter_info.cu, built into every adapter library).
typedef int (*kd_adapter_fn)(const void *params, void *stream);
typedef size_t (*kd_adapter_size_fn)(const char *contract);
typedef int (*kd_adapter_sync_fn)(void);
typedef const char *(*kd_adapter_name_fn)(int code);

static int kd_adapter_call(void *fn, const void *params) { return ((kd_adapter_fn)fn)(params, NULL); }
static size_t kd_adapter_size(void *fn, const char *contract) { return ((kd_adapter_size_fn)fn)(contract); }
static int kd_adapter_sync(void *fn) { return ((kd_adapter_sync_fn)fn)(); }
static const char *kd_adapter_name(void *fn, int code) { return ((kd_adapter_name_fn)fn)(code); }
*/
import "C"

import (
	"errors"
	"fmt"
	"sort"
	"unsafe"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/internal/dl"
)

// adapterUnsupported is KD_ADAPTER_UNSUPPORTED (kernels/kd_adapter.h): an
// adapter function's answer for a case configuration it declines.
const adapterUnsupported = -1

// errDeclined is returned by adapterLib.call when the adapter declined the
// case (KD_ADAPTER_UNSUPPORTED).
var errDeclined = errors.New("the adapter declines this case (KD_ADAPTER_UNSUPPORTED)")

// adapterLib is a loaded adapter library: its adapter functions by
// contract name, and the helpers kd_adapter_info.cu adds. A library is
// never unloaded (its runtime's threads may still run).
type adapterLib struct {
	path  string
	fns   map[string]unsafe.Pointer
	sync  unsafe.Pointer
	names unsafe.Pointer
}

// adapterFunc is the symbol of contract's adapter function.
func adapterFunc(contract string) string { return "kd_adapter_" + contract }

// openAdapter dlopens the library at path and looks up the adapter
// function of every launcher's contract (the one list of kernels: each
// function is declared by the generated kernels/kd_adapter.h). It fails
// when the library does not load, lacks kd_adapter_info.cu's helpers,
// defines no adapter function, or was built against a parameter struct of
// another size than the launcher packs (a stale build of another
// header).
func openAdapter(path string) (*adapterLib, error) {
	h, err := dl.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loading the adapter library: %s", err)
	}
	sym := func(name string) unsafe.Pointer { return dl.Sym(h, name) }
	a := &adapterLib{path: path, fns: map[string]unsafe.Pointer{}, sync: sym("kd_adapter_synchronize"), names: sym("kd_adapter_error_name")}
	size := sym("kd_adapter_params_size")
	if a.sync == nil || a.names == nil || size == nil {
		return nil, fmt.Errorf("%s lacks kd_adapter_synchronize, kd_adapter_error_name or kd_adapter_params_size: not built by difftest's cudasrc (kernels/kd_adapter_info.cu)", path)
	}
	var all []string
	for _, name := range launcherNames() {
		all = append(all, adapterFunc(name))
		fn := sym(adapterFunc(name))
		if fn == nil {
			continue
		}
		l := launchers[name]
		cname := C.CString(name)
		got := int(C.kd_adapter_size(size, cname))
		C.free(unsafe.Pointer(cname))
		if got != l.Size {
			return nil, fmt.Errorf("%s: built against a %s of %d bytes, this difftest packs %d (%s): rebuild it", path, l.Struct, got, l.Size, l.Header)
		}
		a.fns[name] = fn
	}
	if len(a.fns) == 0 {
		return nil, fmt.Errorf("%s defines none of %v (kernels/kd_adapter.h): nothing to test", path, all)
	}
	return a, nil
}

// kernels returns the contracts the library implements, sorted.
func (a *adapterLib) kernels() []string {
	ks := make([]string, 0, len(a.fns))
	for k := range a.fns {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// call runs contract's adapter function on the packed parameter struct
// (copied to C memory for the call) with the null stream. A non-zero
// cudaError_t is a *cuda.CUDAError carrying that code and the runtime's
// name for it (runtime and driver codes agree for the device faults:
// 700 illegal address, 716 misaligned, 719 launch failure); a declined
// case is errDeclined.
func (a *adapterLib) call(contract string, params []byte) error {
	fn, ok := a.fns[contract]
	if !ok {
		return fmt.Errorf("the adapter library defines no %s", adapterFunc(contract))
	}
	p := C.CBytes(params)
	defer C.free(p)
	rc := int(C.kd_adapter_call(fn, p))
	switch rc {
	case 0:
		return nil
	case adapterUnsupported:
		return errDeclined
	}
	return a.codeError("", rc)
}

// synchronize waits for the work the adapter launched (cudaDeviceSynchronize;
// on the emulator, launches are synchronous and this reports a trapped
// thread, which is sticky).
func (a *adapterLib) synchronize() error {
	if rc := int(C.kd_adapter_sync(a.sync)); rc != 0 {
		return a.codeError("cudaDeviceSynchronize", rc)
	}
	return nil
}

// codeError is the *cuda.CUDAError of a runtime error code rc returned
// by call ("" for the adapter function itself, which the caller names).
func (a *adapterLib) codeError(call string, rc int) error {
	name := ""
	if s := C.kd_adapter_name(a.names, C.int(rc)); s != nil {
		name = C.GoString(s)
	}
	return &cuda.CUDAError{Call: call, Code: cuda.Result(rc), Name: name}
}
