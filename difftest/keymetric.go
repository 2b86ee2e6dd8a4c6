// The one metric per case that the human table shows.
package difftest

import (
	"fmt"
	"sort"
)

// KeyMetricer is implemented by kernels that choose the metric the human
// table shows for a case (for example "recall=0.998" for top-k or
// "max_ulp=1" for a BF16 store). It receives the record after the checks;
// an empty string falls back to the default choice of KeyMetric.
type KeyMetricer interface {
	KeyMetric(rec *Record) string
}

// The default preference orders: the first of these present in a
// record's metrics is shown. A failure shows how much is wrong; a pass
// shows how close it came to the bound, and only that: a pass's recall
// (top-k's overlap with the reference's own choice among tied keys, 0.05
// on a valid row of ReLU zeros) or any other metric would read as an
// alarm on a row that met its contract, so a pass without a distance
// shows none.
var (
	passMetricNames = []string{"max_ulp", "max_code_distance", "max_ratio"}
	failMetricNames = []string{"mismatches", "missing", "extra", "max_ulp", "max_code_distance", "max_ratio", "recall", "valid"}
)

// KeyMetric returns the metric the human table shows for rec: the
// kernel's choice when it implements KeyMetricer; else, for a failure,
// the first of mismatches, missing, extra, max_ulp, max_code_distance,
// max_ratio, recall, valid present in rec.Metrics, else the
// alphabetically first scalar metric; for a pass the first of max_ulp,
// max_code_distance, max_ratio (its distance to the reference or the
// bound); else "".
func KeyMetric(k Kernel, rec *Record) string {
	if km, ok := k.(KeyMetricer); ok {
		if s := km.KeyMetric(rec); s != "" {
			return s
		}
	}
	order := passMetricNames
	if rec.Failed() {
		order = failMetricNames
	}
	for _, name := range order {
		if v, ok := rec.Metrics[name]; ok {
			if s, ok := scalar(v); ok {
				return name + "=" + s
			}
		}
	}
	if !rec.Failed() {
		return ""
	}
	names := make([]string, 0, len(rec.Metrics))
	for name := range rec.Metrics {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if s, ok := scalar(rec.Metrics[name]); ok {
			return name + "=" + s
		}
	}
	return ""
}

func scalar(v any) (string, bool) {
	switch x := v.(type) {
	case bool, string:
		return fmt.Sprint(x), true
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(x), true
	case float32:
		return fmt.Sprintf("%.4g", x), true
	case float64:
		return fmt.Sprintf("%.4g", x), true
	}
	return "", false
}
