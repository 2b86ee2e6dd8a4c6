package pipeline

import (
	"runtime"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// A batch of 2^40 is refused from its value, before anything is sized
// from it (it used to allocate 8 TiB of row lengths first).
func TestHugeBatchRefusedBeforeAllocating(t *testing.T) {
	for _, batch := range []int64{1 << 40, 1 << 62, 1<<21 + 1, 0, -1} {
		spec := difftest.CaseSpec{Kernel: KernelName, Family: "needle", Name: "huge", Params: map[string]any{
			"lengths": []any{int64(1)}, "batch": batch}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := CheckSpec(spec)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), `param "batch"`) {
			t.Errorf("batch %d: err %v, want a param \"batch\" error", batch, err)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("batch %d: allocated %d bytes before refusing", batch, d)
		}
	}
}
