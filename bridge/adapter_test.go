package bridge

import (
	"path/filepath"
	"strings"
	"testing"
)

// openAdapter refuses a library that does not load (dlerror's text) and
// one that loads but was not built by cudasrc (no kd_adapter_info.cu).
func TestOpenAdapterRefuses(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libadapter.so")
	_, err := openAdapter(missing)
	if err == nil || !strings.HasPrefix(err.Error(), "loading the adapter library: "+missing+": ") {
		t.Errorf("openAdapter(%s) = %v, want loading the adapter library: and dlerror's text", missing, err)
	}
	_, err = openAdapter("libc.so.6")
	if err == nil || !strings.Contains(err.Error(), "libc.so.6 lacks kd_adapter_synchronize") {
		t.Errorf("openAdapter(libc.so.6) = %v, want it to lack kd_adapter_synchronize", err)
	}
}
