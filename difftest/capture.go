// Capture files: one case saved as safetensors (DESIGN.md §7), the format
// of `difftest replay` and of the exec protocol.
//
// The container is the safetensors format of Hugging Face
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length n, n bytes of JSON header mapping each tensor name to
// {"dtype", "shape", "data_offsets"} plus an optional "__metadata__"
// object of string values, then the raw little-endian tensor bytes.
// Encoding and decoding go through github.com/nlpodyssey/safetensors;
// this file adds the kerneldiff rules on top (dtypes, names, metadata
// keys) and errors that name the file, the tensor and the rule.

package difftest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	st "github.com/nlpodyssey/safetensors"
)

// ErrCapture is the sentinel every *CaptureError wraps: a safetensors file
// (a capture, or an exec program's out.safetensors) that cannot be read as
// a kerneldiff case. Together with ErrInvalidInput it maps to exit code 2.
var ErrCapture = errors.New("bad capture file")

// CaptureError reports one problem with a safetensors file: which file,
// which tensor (or metadata key, or "header"), and the broken rule.
//
//	capture run/x.safetensors: tensor "scores": dtype must be F32, got I32
//
// When the problem is a case that breaks its kernel contract, Err is the
// kernel's *InputError and errors.Is matches both ErrCapture and
// ErrInvalidInput.
type CaptureError struct {
	Path   string // the file
	Tensor string // tensor name, `__metadata__["key"]`, or "header"; empty for the whole file
	Rule   string // the rule and the offending value
	Err    error  // underlying error (an *InputError, an *os.PathError), or nil
}

func (e *CaptureError) Error() string {
	return captureOneLine("capture " + e.Path + ": " + e.detail())
}

// detail is the message without the file name.
func (e *CaptureError) detail() string {
	var b strings.Builder
	if e.Tensor != "" {
		b.WriteString(e.Tensor)
		b.WriteString(": ")
	}
	b.WriteString(e.Rule)
	if e.Err != nil {
		if e.Rule != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns ErrCapture and, when set, the underlying error.
func (e *CaptureError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrCapture, e.Err}
	}
	return []error{ErrCapture}
}

// Metadata keys of a capture file. All values are strings (the safetensors
// rule for __metadata__).
const (
	MetaKernel    = "kernel"    // kernel contract name, e.g. "topk_transform" (required)
	MetaParams    = "params"    // the kernel's parameter struct as JSON (required)
	MetaCase      = "case"      // case id, kernel/name (required)
	MetaFamily    = "family"    // input family (optional)
	MetaSeed      = "seed"      // suite seed, decimal uint64 (optional)
	MetaKey       = "key"       // Philox key, "0x" + 16 hex digits (optional)
	MetaGenerator = "generator" // GeneratorVersion that drew the inputs, decimal (optional)
)

// Prefixes of extra tensors that hold an implementation's result ("got.")
// or the reference's ("want.") for an output of the case.
const (
	GotPrefix  = "got."
	WantPrefix = "want."
)

// WriteSafetensors writes tensors and string metadata as one safetensors
// file at path (created or truncated, mode 0644). Names must be distinct,
// non-empty and not "__metadata__"; every tensor's Data must match its
// dtype and shape. Tensor order in the file is the writer's (by dtype
// alignment, then name), not the slice order. Programs that speak the
// exec protocol in Go use it to write out.safetensors.
func WriteSafetensors(path string, tensors []*Tensor, meta map[string]string) error {
	views := make(map[string]captureView, len(tensors))
	for _, t := range tensors {
		if err := captureCheckName(t.Name); err != nil {
			return &CaptureError{Path: path, Tensor: strconv.Quote(t.Name), Rule: err.Error()}
		}
		if _, dup := views[t.Name]; dup {
			return &CaptureError{Path: path, Tensor: strconv.Quote(t.Name), Rule: "name used twice"}
		}
		dt, err := st.ParseDType(string(t.DType))
		if err != nil || t.DType.Size() == 0 {
			return &CaptureError{Path: path, Tensor: strconv.Quote(t.Name), Rule: fmt.Sprintf("dtype %q is not one of F32, F64, I32, I64, BF16, U8", t.DType)}
		}
		if err := t.CheckLayout(t.DType, -1); err != nil {
			return &CaptureError{Path: path, Tensor: strconv.Quote(t.Name), Rule: "bad layout", Err: err}
		}
		shape := make([]uint64, len(t.Shape))
		for i, d := range t.Shape {
			shape[i] = uint64(d)
		}
		views[t.Name] = captureView{dtype: dt, shape: shape, data: t.Data}
	}
	f, err := os.Create(path)
	if err != nil {
		return &CaptureError{Path: path, Rule: "cannot create", Err: err}
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = st.SerializeToWriter(views, meta, w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &CaptureError{Path: path, Rule: "cannot write", Err: err}
	}
	return nil
}

// ReadSafetensors reads a whole safetensors file. It returns every tensor
// by name (Data is a fresh copy owned by the caller) and the
// __metadata__ strings (an empty map when absent). Errors are
// *CaptureError values naming the problem: a file shorter than 8 bytes, a
// header length past the end of the file, a header that is not JSON or not
// a safetensors header, a dtype kerneldiff does not use (F16, F8_E4M3 ...),
// data offsets that do not tile the data section, or a data section of the
// wrong size (a truncated or padded file).
func ReadSafetensors(path string) (map[string]*Tensor, map[string]string, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, &CaptureError{Path: path, Rule: "cannot read", Err: err}
	}
	fail := func(tensor, format string, args ...any) error {
		return &CaptureError{Path: path, Tensor: tensor, Rule: fmt.Sprintf(format, args...)}
	}
	if len(buf) < 8 {
		return nil, nil, fail("", "file is %d bytes, too short for the 8-byte header length", len(buf))
	}
	n := binary.LittleEndian.Uint64(buf)
	if n > uint64(len(buf)-8) {
		return nil, nil, fail("", "header length %d runs past the end of the %d-byte file (truncated, or not safetensors)", n, len(buf))
	}
	if err := captureCheckHeader(buf[8:8+n], uint64(len(buf))-8-n); err != nil {
		return nil, nil, &CaptureError{Path: path, Tensor: err.tensor, Rule: err.rule}
	}
	// The library re-checks the layout and decodes the header; after the
	// checks above it can only fail on something they missed.
	_, md, err := st.ReadMetadata(buf)
	if err != nil {
		return nil, nil, fail("header", "%v", err)
	}
	data := buf[8+n:]
	infos := md.Tensors()
	tensors := make(map[string]*Tensor, len(infos))
	for name, info := range infos {
		shape := make([]int, len(info.Shape))
		for i, d := range info.Shape {
			shape[i] = int(d)
		}
		t := &Tensor{Name: name, DType: DType(info.DType.String()), Shape: shape,
			Data: append([]byte{}, data[info.DataOffsets[0]:info.DataOffsets[1]]...)}
		if len(t.Data) != t.Len()*t.DType.Size() {
			return nil, nil, fail(strconv.Quote(name), "holds %d bytes, shape %v of %s needs %d", len(t.Data), t.Shape, t.DType, t.Len()*t.DType.Size())
		}
		tensors[name] = t
	}
	meta := md.Metadata()
	if meta == nil {
		meta = map[string]string{}
	}
	return tensors, meta, nil
}

// captureHeaderError is one broken rule of a safetensors header.
type captureHeaderError struct{ tensor, rule string }

// captureCheckHeader checks a safetensors JSON header against the format,
// naming the entry at fault: every entry an object {dtype, shape,
// data_offsets} with a dtype kerneldiff uses, dimensions in [0, 2^31),
// offsets that hold exactly the shape's bytes, and tensors that tile the
// dataLen-byte data section with no gap or overlap; __metadata__ a map of
// strings.
func captureCheckHeader(header []byte, dataLen uint64) *captureHeaderError {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return &captureHeaderError{"header", fmt.Sprintf("not a JSON object: %v", err)}
	}
	type span struct {
		name       string
		begin, end uint64
	}
	var spans []span
	for name, v := range raw {
		q := strconv.Quote(name)
		if name == "__metadata__" {
			var m map[string]any
			if err := json.Unmarshal(v, &m); err != nil {
				return &captureHeaderError{name, "must be a JSON object of strings"}
			}
			for k, val := range m {
				if _, ok := val.(string); !ok {
					return &captureHeaderError{captureMetaName(k), fmt.Sprintf("must be a string, got %s", captureJSONValue(val))}
				}
			}
			continue
		}
		var info struct {
			DType       *string   `json:"dtype"`
			Shape       *[]uint64 `json:"shape"`
			DataOffsets []uint64  `json:"data_offsets"`
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&info); err != nil || info.DType == nil || info.Shape == nil || len(info.DataOffsets) != 2 {
			return &captureHeaderError{q, fmt.Sprintf("header entry must be {\"dtype\": string, \"shape\": [naturals], \"data_offsets\": [begin, end]}, got %.80s", v)}
		}
		dt := DType(*info.DType)
		if dt.Size() == 0 {
			return &captureHeaderError{q, fmt.Sprintf("dtype %q is not one of F32, F64, I32, I64, BF16, U8", *info.DType)}
		}
		// size saturates at 2^62, past any real file, so it cannot wrap.
		const huge = uint64(1) << 62
		size := uint64(dt.Size())
		for i, d := range *info.Shape {
			if d > math.MaxInt32 {
				return &captureHeaderError{q, fmt.Sprintf("dimension %d is %d, above 2^31-1", i, d)}
			}
			if d != 0 && size > huge/d {
				size = huge
			} else {
				size *= d
			}
		}
		if slices.Contains(*info.Shape, 0) {
			size = 0
		}
		b, e := info.DataOffsets[0], info.DataOffsets[1]
		switch {
		case e < b:
			return &captureHeaderError{q, fmt.Sprintf("data_offsets [%d %d] run backwards", b, e)}
		case e > dataLen:
			return &captureHeaderError{q, fmt.Sprintf("data_offsets [%d %d] run past the %d-byte data section (truncated file)", b, e, dataLen)}
		case size == huge:
			return &captureHeaderError{q, fmt.Sprintf("shape %v of %s needs 2^62 bytes or more", *info.Shape, dt)}
		case e-b != size:
			return &captureHeaderError{q, fmt.Sprintf("data_offsets [%d %d] hold %d bytes, shape %v of %s needs %d", b, e, e-b, *info.Shape, dt, size)}
		}
		spans = append(spans, span{name, b, e})
	}
	slices.SortFunc(spans, func(a, b span) int {
		if a.begin != b.begin {
			return cmpUint64(a.begin, b.begin)
		}
		return cmpUint64(a.end, b.end)
	})
	var at uint64
	prev := ""
	for _, s := range spans {
		switch {
		case s.begin > at:
			return &captureHeaderError{"header", fmt.Sprintf("data bytes [%d, %d) belong to no tensor", at, s.begin)}
		case s.begin < at:
			return &captureHeaderError{strconv.Quote(s.name), fmt.Sprintf("data_offsets [%d %d] overlap tensor %q", s.begin, s.end, prev)}
		}
		at, prev = s.end, s.name
	}
	if at != dataLen {
		return &captureHeaderError{"", fmt.Sprintf("tensors cover %d bytes, the data section holds %d (trailing bytes)", at, dataLen)}
	}
	return nil
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// captureJSONValue renders a decoded JSON value for a message.
func captureJSONValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// WriteCapture saves case c as a safetensors file at path, written to a
// temporary file in the same folder and renamed, so a reader never sees a
// half-written capture. The file holds every input tensor under its
// contract name, then extra: the initial (canary) state of InOut outputs
// under the output's name (e.g. "cache"), and optionally results under
// GotPrefix or WantPrefix plus an output name ("got.page_indices"). Every
// extra must have the dtype and shape of the output it names. __metadata__
// holds kernel, params (JSON of c.Params), case, family, seed, key and
// generator (GeneratorVersion); see the Meta* constants.
//
// Errors (a *CaptureError): a name used twice or naming no output, a
// dtype or shape that differs from the output spec, a tensor whose Data
// does not match its shape, Params that do not marshal, or an I/O error.
func WriteCapture(path string, c *Case, extra []*Tensor) error {
	if c == nil || c.Kernel == "" || c.ID == "" {
		return &CaptureError{Path: path, Rule: "case has no kernel or id"}
	}
	params, err := captureParamsJSON(c.Params)
	if err != nil {
		return &CaptureError{Path: path, Tensor: captureMetaName(MetaParams), Rule: "cannot marshal the case's params", Err: err}
	}
	for _, t := range extra {
		if err := captureCheckExtra(c, t); err != nil {
			return &CaptureError{Path: path, Tensor: strconv.Quote(t.Name), Rule: err.Error()}
		}
	}
	meta := map[string]string{
		MetaKernel:    c.Kernel,
		MetaParams:    params,
		MetaCase:      c.ID,
		MetaSeed:      strconv.FormatUint(c.Seed, 10),
		MetaKey:       fmt.Sprintf("0x%016x", c.Key),
		MetaGenerator: strconv.Itoa(GeneratorVersion),
	}
	if c.Family != "" {
		meta[MetaFamily] = c.Family
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return &CaptureError{Path: path, Rule: "cannot create", Err: err}
	}
	tmpName := tmp.Name()
	tmp.Close()
	if err := os.Chmod(tmpName, 0o644); err != nil {
		os.Remove(tmpName)
		return &CaptureError{Path: path, Rule: "cannot create", Err: err}
	}
	all := append(slices.Clip(c.Inputs), extra...)
	if err := WriteSafetensors(tmpName, all, meta); err != nil {
		os.Remove(tmpName)
		var ce *CaptureError
		if errors.As(err, &ce) {
			ce.Path = path
		}
		return err
	}
	if err := os.Rename(tmpName, path); err != nil {
		os.Remove(tmpName)
		return &CaptureError{Path: path, Rule: "cannot rename into place", Err: err}
	}
	return nil
}

// ReadCapture reads a capture written by WriteCapture (or an exec
// protocol in.safetensors, which carries only kernel, params and case).
// It looks the kernel up in the registry, rebuilds the case with
// Kernel.FromTensors from every tensor that has no GotPrefix/WantPrefix,
// sets ID, Kernel, Family, Seed and Key from the metadata, and runs
// Kernel.Validate. It returns the case and the extra tensors: every tensor
// of the file that is not one of the case's inputs, by name.
//
// The generator version is checked for syntax only: a capture holds the
// input bytes themselves, so it replays exactly under any generator.
//
// Every error is a *CaptureError naming the file and the problem, and
// wraps ErrCapture (plus ErrInvalidInput when the kernel rejects the
// inputs): unreadable or malformed file, a missing or malformed metadata
// key, bad params JSON, an unknown kernel, a missing tensor or one of the
// wrong dtype or shape (as FromTensors and Validate report them), or an
// extra tensor that names no output of the case or disagrees with its
// dtype and shape.
func ReadCapture(path string) (*Case, map[string]*Tensor, error) {
	tensors, meta, err := ReadSafetensors(path)
	if err != nil {
		return nil, nil, err
	}
	fail := func(tensor, format string, args ...any) error {
		return &CaptureError{Path: path, Tensor: tensor, Rule: fmt.Sprintf(format, args...)}
	}
	for _, key := range []string{MetaKernel, MetaCase, MetaParams} {
		if meta[key] == "" {
			return nil, nil, fail(captureMetaName(key), "missing (required: kernel, case, params)")
		}
	}
	params := json.RawMessage(meta[MetaParams])
	var probe any
	if err := json.Unmarshal(params, &probe); err != nil {
		return nil, nil, fail(captureMetaName(MetaParams), "not valid JSON: %v", err)
	}
	var seed, key uint64
	if s, ok := meta[MetaSeed]; ok {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			return nil, nil, fail(captureMetaName(MetaSeed), "must be a decimal uint64, got %q", s)
		}
	}
	if s, ok := meta[MetaKey]; ok {
		if key, err = strconv.ParseUint(s, 0, 64); err != nil {
			return nil, nil, fail(captureMetaName(MetaKey), "must be a uint64 (0x-prefixed hex or decimal), got %q", s)
		}
	}
	if s, ok := meta[MetaGenerator]; ok {
		if _, err := strconv.Atoi(s); err != nil {
			return nil, nil, fail(captureMetaName(MetaGenerator), "must be a decimal integer, got %q", s)
		}
	}
	name := meta[MetaKernel]
	k, ok := LookupKernel(name)
	if !ok {
		var known []string
		for _, k := range Kernels() {
			known = append(known, k.Name())
		}
		return nil, nil, fail(captureMetaName(MetaKernel), "unknown kernel %q (registered: %s)", name, strings.Join(known, ", "))
	}
	id := meta[MetaCase]
	feed := make(map[string]*Tensor, len(tensors))
	for n, t := range tensors {
		if !strings.HasPrefix(n, GotPrefix) && !strings.HasPrefix(n, WantPrefix) {
			feed[n] = t
		}
	}
	c, err := k.FromTensors(id, params, feed)
	if err != nil {
		return nil, nil, &CaptureError{Path: path, Rule: "kernel " + name + " rejects the tensors", Err: err}
	}
	if c == nil {
		return nil, nil, fail("", "kernel %s rebuilt no case", name)
	}
	c.ID, c.Kernel, c.Seed, c.Key = id, name, seed, key
	if f, ok := meta[MetaFamily]; ok {
		c.Family = f
	}
	if err := k.Validate(c); err != nil {
		return nil, nil, &CaptureError{Path: path, Err: err}
	}
	extra := map[string]*Tensor{}
	for n, t := range tensors {
		if c.Input(n) != nil {
			continue
		}
		if err := captureCheckExtra(c, t); err != nil {
			return nil, nil, fail(strconv.Quote(n), "%v", err)
		}
		extra[n] = t
	}
	return c, extra, nil
}

// captureCheckExtra checks that t, an extra tensor of a capture, names an
// output of c (bare, or after GotPrefix/WantPrefix) with its dtype and shape.
func captureCheckExtra(c *Case, t *Tensor) error {
	if c.Input(t.Name) != nil {
		return fmt.Errorf("is also an input of the case")
	}
	out := strings.TrimPrefix(strings.TrimPrefix(t.Name, GotPrefix), WantPrefix)
	for _, o := range c.Outputs {
		if o.Name != out {
			continue
		}
		if t.DType != o.DType || !slices.Equal(t.Shape, o.Shape) {
			return fmt.Errorf("must be %s%v like output %s, got %s%v", o.DType, o.Shape, o.Name, t.DType, t.Shape)
		}
		return nil
	}
	names := make([]string, len(c.Outputs))
	for i, o := range c.Outputs {
		names[i] = o.Name
	}
	return fmt.Errorf("is neither an input nor an output (%s, optionally prefixed %q or %q) of kernel %s",
		strings.Join(names, ", "), GotPrefix, WantPrefix, c.Kernel)
}

// captureParamsJSON renders a case's Params for the "params" metadata key.
func captureParamsJSON(p any) (string, error) {
	b, err := json.Marshal(p)
	return string(b), err
}

func captureMetaName(key string) string { return `__metadata__["` + key + `"]` }

// captureCheckName rejects names the safetensors header cannot carry.
func captureCheckName(name string) error {
	switch name {
	case "":
		return errors.New("empty tensor name")
	case "__metadata__":
		return errors.New("name is reserved by safetensors")
	}
	return nil
}

// captureOneLine folds a multi-line text into one line for reports: lines are
// trimmed, blank ones dropped, the rest joined with " | ".
func captureOneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " | ")
}

// captureView adapts a tensor to the safetensors writer's View interface.
type captureView struct {
	dtype st.DType
	shape []uint64
	data  []byte
}

func (v captureView) DType() st.DType { return v.dtype }
func (v captureView) Shape() []uint64 { return v.shape }
func (v captureView) Data() []byte    { return v.data }
func (v captureView) DataLen() uint64 { return uint64(len(v.data)) }
