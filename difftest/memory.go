package difftest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Footprint is what one case of a suite entry holds in memory while it
// runs, in bytes, each part named as the refusal prints it: its input
// tensors, its output tensors, and the working memory the reference and
// the checks take beyond them (Scratch). A kernel computes it from the
// entry's parameters alone (Footprinter), before anything is drawn.
type Footprint struct {
	Inputs  []Size
	Outputs []Size
	Scratch []Size
}

// Copies of each input and output a case holds at once, as Bytes counts
// them: the harness's inputs and the implementation's copy of them; the
// reference's outputs, the two runs' (poison A and B, compared with each
// other) and the implementation's copy of one run.
const (
	InputCopies  = 2
	OutputCopies = 4
)

// Bytes returns the estimate a case is held to: InputCopies times the
// inputs, OutputCopies times the outputs, and the scratch. It saturates at
// math.MaxInt64 rather than overflow.
func (f Footprint) Bytes() int64 {
	var total int64
	add := func(n, times int64) {
		if n < 0 {
			return
		}
		if n > (math.MaxInt64-total)/times {
			total = math.MaxInt64
			return
		}
		total += n * times
	}
	for _, s := range f.Inputs {
		add(s.V, InputCopies)
	}
	for _, s := range f.Outputs {
		add(s.V, OutputCopies)
	}
	for _, s := range f.Scratch {
		add(s.V, 1)
	}
	return total
}

// String names the three largest parts with their sizes, largest first:
// "x 1 GiB (input), cache 528 MiB (output), positions 32 MiB (input)".
func (f Footprint) String() string {
	type part struct {
		Size
		kind string
	}
	var parts []part
	for _, g := range []struct {
		kind  string
		sizes []Size
	}{{"input", f.Inputs}, {"output", f.Outputs}, {"scratch", f.Scratch}} {
		for _, s := range g.sizes {
			parts = append(parts, part{s, g.kind})
		}
	}
	// Largest first; a stable insertion sort keeps the contract order
	// among equals.
	for i := 1; i < len(parts); i++ {
		for j := i; j > 0 && parts[j].V > parts[j-1].V; j-- {
			parts[j], parts[j-1] = parts[j-1], parts[j]
		}
	}
	var b strings.Builder
	for i, p := range parts {
		if i == 3 {
			fmt.Fprintf(&b, ", %d more", len(parts)-3)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s (%s)", p.Name, FormatBytes(p.V), p.kind)
	}
	return b.String()
}

// Footprinter is an optional interface of a Kernel: Footprint returns the
// memory a case of spec would hold (Footprint), from its parameters alone,
// without drawing or allocating anything. It returns the error NewCase
// would for a spec it cannot size. The run refuses a case whose Footprint
// exceeds the memory budget (Config.MaxMemory) before NewCase allocates
// its inputs.
type Footprinter interface {
	Footprint(spec CaseSpec) (Footprint, error)
}

// TensorBytes returns the bytes of a tensor of dtype dt and shape dims,
// saturating at math.MaxInt64 (a negative dimension counts as 0).
func TensorBytes(dt DType, dims ...int) int64 {
	n := int64(dt.Size())
	for _, d := range dims {
		if d <= 0 {
			return 0
		}
		if n > math.MaxInt64/int64(d) {
			return math.MaxInt64
		}
		n *= int64(d)
	}
	return n
}

// BudgetError is a case refused because its Footprint exceeds the memory
// budget: the CLI exits 2 with its message, before the case allocates
// anything.
type BudgetError struct {
	Case      string
	Footprint Footprint
	Budget    int64
}

// Error returns one line: the case, its estimate and its largest parts,
// and the budget.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("case %s: needs about %s (%s; inputs ×%d, outputs ×%d), over the memory budget of %s: lower its sizes or raise --max-memory",
		e.Case, FormatBytes(e.Footprint.Bytes()), e.Footprint, InputCopies, OutputCopies, FormatBytes(e.Budget))
}

// CheckBudget returns a *BudgetError when k sizes spec (Footprinter) over
// budget bytes, and nil when it fits, when budget ≤ 0 (no budget), or
// when k does not size its cases. A spec k cannot size is left to NewCase
// to reject.
func CheckBudget(k Kernel, spec CaseSpec, budget int64) error {
	fp, ok := k.(Footprinter)
	if budget <= 0 || !ok {
		return nil
	}
	f, err := fp.Footprint(spec)
	if err != nil {
		return nil
	}
	if f.Bytes() > budget {
		return &BudgetError{Case: spec.ID(), Footprint: f, Budget: budget}
	}
	return nil
}

// FormatBytes writes n bytes in binary units with up to three significant
// figures: "512 B", "1.5 KiB", "528 MiB", "4 GiB".
func FormatBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, u := float64(n), 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", n)
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	if v >= 100 {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	} else if v >= 10 {
		s = strconv.FormatFloat(v, 'f', 1, 64)
	}
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s + " " + units[u]
}

// ParseBytes reads a size for --max-memory: a whole number of bytes, or a
// number (a decimal fraction allowed) with a unit K, M, G, T (powers of
// 1024; KiB, MiB, GiB, TiB and KB, MB, GB, TB are the same), e.g. "8G",
// "1.5GiB", "512M". 0 means no budget. A negative, empty or unparsable
// size, or one beyond 2^63 − 1 bytes, is an error that says which.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRightFunc(t, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	unit := strings.ToUpper(strings.TrimSpace(t[len(num):]))
	num = strings.TrimSpace(num)
	mult := map[string]float64{"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
		"G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}[unit]
	if mult == 0 {
		return 0, fmt.Errorf("%q: unknown unit %q (want B, K, M, G or T, powers of 1024)", s, unit)
	}
	if num == "" || strings.ContainsAny(num, "xXpPeE_+") {
		return 0, fmt.Errorf("%q: want a size such as 8G, 512M or 1073741824", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("%q: want a size such as 8G, 512M or 1073741824", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q: must be ≥ 0 (0 = no budget)", s)
	}
	b := v * mult
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("%q: beyond 2^63 − 1 bytes", s)
	}
	return int64(b), nil
}

// MachineMemory returns the memory this process may use, in bytes: the
// smaller of the machine's (MemTotal in /proc/meminfo) and its control
// group's limit (memory.max, cgroup v2, or memory.limit_in_bytes, v1),
// and 0 where neither can be read (not Linux).
func MachineMemory() int64 {
	var total int64
	if b, err := ReadFileLimit("/proc/meminfo", 1<<16); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) == 2 && f[1] == "kB" {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb > 0 && kb < math.MaxInt64/1024 {
						total = kb * 1024
					}
				}
			}
		}
	}
	for _, file := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := ReadFileLimit(file, 64)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

// DefaultMaxMemory is --max-memory's default: three quarters of
// MachineMemory (the rest for the implementation's own process, the
// operating system and the Go collector's headroom), or 0 (no budget)
// where the machine's memory is unknown.
func DefaultMaxMemory() int64 { return MachineMemory() / 4 * 3 }

// OutputSizes returns the bytes of each output of outs, for a Footprint.
func OutputSizes(outs []OutputSpec) []Size {
	s := make([]Size, len(outs))
	for i, o := range outs {
		s[i] = Size{Name: o.Name, V: TensorBytes(o.DType, o.Shape...)}
	}
	return s
}
