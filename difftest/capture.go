// Capture files: one case saved as safetensors (docs/interfaces.md), the format
// of `difftest replay` and of the exec protocol.
//
// The container is the safetensors format of Hugging Face
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian
// header length n, n bytes of JSON header mapping each tensor name to
// {"dtype", "shape", "data_offsets"} plus an optional "__metadata__"
// object of string values, then the raw little-endian tensor bytes.
// Encoding goes through github.com/nlpodyssey/safetensors. Decoding is
// this file's own, so that it can be bounded: the header length first,
// then the header, then only the bytes the header declares, each bounded
// before it is allocated (the library reads the whole file first). This
// file adds the kerneldiff rules on top (dtypes, names, metadata keys)
// and errors that name the file, the tensor and the rule.

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
	"regexp"
	"slices"
	"sort"
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

// Error returns "capture PATH: " and Detail, on one line.
func (e *CaptureError) Error() string {
	return CaptureOneLine("capture " + e.Path + ": " + e.Detail())
}

// Detail is the message without the file name (for a caller whose
// temporary path is gone).
func (e *CaptureError) Detail() string {
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
	MetaImpl      = "impl"      // the --impl the failure was saved from, replay's default (optional)
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
			return &CaptureError{Path: path, Tensor: strconv.Quote(t.Name), Rule: fmt.Sprintf("dtype %q is not one of F32, F64, I32, I64, BF16, F16, U8", t.DType)}
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

// MaxHeaderBytes bounds the JSON header of a safetensors file: 16 MiB.
// The header a kerneldiff capture or exec output needs is a few hundred
// bytes per tensor plus the params JSON (at most a few hundred KiB, e.g.
// topk's needle list of one int per row); the format's reference reader
// allows 100 MB. The header length is read and checked against it (and
// against the file's size) before the header is allocated.
const MaxHeaderBytes = 16 << 20

// MaxSafetensorsData bounds the data section ReadSafetensors reads, and
// the bytes ReadCapture reads after the kernel has bounded each tensor by
// its own contract (a backstop): 8 GiB, above the largest case the
// kernels' size limits allow with its saved results (norm_rope_store:
// x 1 GiB, freqs 512 MiB, three 1 GiB caches).
const MaxSafetensorsData = 8 << 30

// stEntry is one tensor of a safetensors header: its dtype, shape and
// byte range in the data section, checked against each other.
type stEntry struct {
	dtype      DType
	shape      []int
	begin, end uint64
}

// placeholder returns the tensor e declares, named name, with no Data.
func (e stEntry) placeholder(name string) *Tensor {
	return &Tensor{Name: name, DType: e.dtype, Shape: slices.Clone(e.shape)}
}

// stFile is an open safetensors file whose header has been read and
// checked; no tensor byte has been read yet.
type stFile struct {
	path    string
	f       *os.File
	start   int64 // offset of the data section: 8 + the header length
	entries map[string]stEntry
	meta    map[string]string
}

// openSafetensors opens the regular file at path (OpenRegular: a FIFO or
// a device is refused by its type), reads the 8-byte header length, bounds
// it by the file's size and MaxHeaderBytes, reads the JSON header and
// checks it (captureCheckHeader) against the size of the data section the
// file's size leaves. Only the header is read. The caller closes the file.
func openSafetensors(path string) (*stFile, error) {
	f, size, err := OpenRegular(path)
	if err != nil {
		if errors.Is(err, ErrNotRegular) {
			return nil, &CaptureError{Path: path, Rule: "refused, a safetensors file must be a regular file", Err: err}
		}
		return nil, &CaptureError{Path: path, Rule: "cannot read", Err: err}
	}
	fail := func(tensor, format string, args ...any) (*stFile, error) {
		f.Close()
		return nil, &CaptureError{Path: path, Tensor: tensor, Rule: fmt.Sprintf(format, args...)}
	}
	if size < 8 {
		return fail("", "file is %d bytes, too short for the 8-byte header length", size)
	}
	var lenBuf [8]byte
	if _, err := f.ReadAt(lenBuf[:], 0); err != nil {
		return fail("", "cannot read the header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > uint64(size-8) {
		return fail("", "header length %d runs past the end of the %d-byte file (truncated, or not safetensors)", n, size)
	}
	if n > MaxHeaderBytes {
		return fail("header", "header length %d is above the limit of %d bytes (MaxHeaderBytes)", n, MaxHeaderBytes)
	}
	header := make([]byte, n)
	if _, err := f.ReadAt(header, 8); err != nil {
		return fail("header", "cannot read the %d-byte header: %v", n, err)
	}
	entries, meta, herr := captureCheckHeader(header, uint64(size)-8-n)
	if herr != nil {
		return fail(herr.tensor, "%s", herr.rule)
	}
	return &stFile{path: path, f: f, start: 8 + int64(n), entries: entries, meta: meta}, nil
}

func (s *stFile) close() { s.f.Close() }

// read reads the bytes of the tensor named name into a fresh Tensor. The
// caller has bounded its size.
func (s *stFile) read(name string) (*Tensor, error) {
	e := s.entries[name]
	t := e.placeholder(name)
	t.Data = make([]byte, e.end-e.begin)
	if _, err := s.f.ReadAt(t.Data, s.start+int64(e.begin)); err != nil {
		return nil, &CaptureError{Path: s.path, Tensor: strconv.Quote(name), Rule: "cannot read its data", Err: err}
	}
	return t, nil
}

// SafetensorsFile is a safetensors file opened with its header read and
// checked, its tensors not yet read (OpenSafetensors): the exec protocol
// reads out.safetensors this way, one output at a time, each after its
// dtype and shape match the contract.
type SafetensorsFile struct{ s *stFile }

// OpenSafetensors opens the regular file at path and reads and checks its
// header (bounded by the file's size and MaxHeaderBytes, data offsets
// tiling the data section); no tensor byte is read. Errors are
// *CaptureError values, as ReadSafetensors's. The caller closes the file.
func OpenSafetensors(path string) (*SafetensorsFile, error) {
	s, err := openSafetensors(path)
	if err != nil {
		return nil, err
	}
	return &SafetensorsFile{s}, nil
}

// Close closes the file.
func (f *SafetensorsFile) Close() { f.s.close() }

// Entry returns the dtype and shape the header gives the tensor named
// name, and whether there is one.
func (f *SafetensorsFile) Entry(name string) (DType, []int, bool) {
	e, ok := f.s.entries[name]
	return e.dtype, e.shape, ok
}

// Names returns the names of the file's tensors, sorted.
func (f *SafetensorsFile) Names() []string {
	names := make([]string, 0, len(f.s.entries))
	for n := range f.s.entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Metadata returns the __metadata__ string under key, and whether there
// is one (the header, and so the string, is bounded by MaxHeaderBytes).
func (f *SafetensorsFile) Metadata(key string) (string, bool) {
	v, ok := f.s.meta[key]
	return v, ok
}

// Read reads the tensor named name (which must be one of Names) into a
// fresh Tensor; the header has bounded its size by the file's.
func (f *SafetensorsFile) Read(name string) (*Tensor, error) { return f.s.read(name) }

// ReadSafetensors reads a whole safetensors file. It returns every tensor
// by name (Data is a fresh copy owned by the caller) and the
// __metadata__ strings (an empty map when absent). Errors are
// *CaptureError values naming the problem: a path that is not a regular
// file (a FIFO or a device is refused by its type, not read), a file
// shorter than 8 bytes, a header length past the end of the file or above
// MaxHeaderBytes, a header that is not JSON or not a safetensors header, a
// dtype kerneldiff does not use (F16, F8_E4M3 ...), data offsets that do
// not tile the data section, a data section of the wrong size for the file
// (a truncated or padded file), or one above MaxSafetensorsData. Sizes are
// checked from the header and the file's size before any tensor byte is
// read. To read a capture, whose tensors the kernel's contract bounds one
// by one, use ReadCapture.
func ReadSafetensors(path string) (map[string]*Tensor, map[string]string, error) {
	s, err := openSafetensors(path)
	if err != nil {
		return nil, nil, err
	}
	defer s.close()
	var total uint64
	for _, e := range s.entries {
		total += e.end - e.begin
	}
	if total > MaxSafetensorsData {
		return nil, nil, &CaptureError{Path: path, Rule: fmt.Sprintf("the tensors hold %d bytes, above the limit of %d (MaxSafetensorsData)", total, uint64(MaxSafetensorsData))}
	}
	tensors := make(map[string]*Tensor, len(s.entries))
	for name := range s.entries {
		t, err := s.read(name)
		if err != nil {
			return nil, nil, err
		}
		tensors[name] = t
	}
	return tensors, s.meta, nil
}

// captureHeaderError is one broken rule of a safetensors header.
type captureHeaderError struct{ tensor, rule string }

// captureCheckHeader checks a safetensors JSON header against the format,
// naming the entry at fault: every entry an object {dtype, shape,
// data_offsets} with a dtype kerneldiff uses, dimensions in [0, 2^31),
// offsets that hold exactly the shape's bytes, and tensors that tile the
// dataLen-byte data section with no gap or overlap; __metadata__ a map of
// strings. It returns the entries by name and the metadata (an empty map
// when absent).
func captureCheckHeader(header []byte, dataLen uint64) (map[string]stEntry, map[string]string, *captureHeaderError) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, nil, &captureHeaderError{"header", fmt.Sprintf("not a JSON object: %v", err)}
	}
	type span struct {
		name       string
		begin, end uint64
	}
	var spans []span
	entries := make(map[string]stEntry, len(raw))
	meta := map[string]string{}
	for name, v := range raw {
		q := strconv.Quote(name)
		if name == "__metadata__" {
			var m map[string]any
			if err := json.Unmarshal(v, &m); err != nil {
				return nil, nil, &captureHeaderError{name, "must be a JSON object of strings"}
			}
			for k, val := range m {
				s, ok := val.(string)
				if !ok {
					return nil, nil, &captureHeaderError{captureMetaName(k), fmt.Sprintf("must be a string, got %s", captureJSONValue(val))}
				}
				meta[k] = s
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
			return nil, nil, &captureHeaderError{q, fmt.Sprintf("header entry must be {\"dtype\": string, \"shape\": [naturals], \"data_offsets\": [begin, end]}, got %.80s", v)}
		}
		dt := DType(*info.DType)
		if dt.Size() == 0 {
			return nil, nil, &captureHeaderError{q, fmt.Sprintf("dtype %q is not one of F32, F64, I32, I64, BF16, F16, U8", *info.DType)}
		}
		// size saturates at 2^62, past any real file, so it cannot wrap.
		const huge = uint64(1) << 62
		size := uint64(dt.Size())
		shape := make([]int, len(*info.Shape))
		for i, d := range *info.Shape {
			if d > math.MaxInt32 {
				return nil, nil, &captureHeaderError{q, fmt.Sprintf("dimension %d is %d, above 2^31-1", i, d)}
			}
			shape[i] = int(d)
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
			return nil, nil, &captureHeaderError{q, fmt.Sprintf("data_offsets [%d %d] run backwards", b, e)}
		case e > dataLen:
			return nil, nil, &captureHeaderError{q, fmt.Sprintf("data_offsets [%d %d] run past the %d-byte data section (truncated file)", b, e, dataLen)}
		case size == huge:
			return nil, nil, &captureHeaderError{q, fmt.Sprintf("shape %v of %s needs 2^62 bytes or more", *info.Shape, dt)}
		case e-b != size:
			return nil, nil, &captureHeaderError{q, fmt.Sprintf("data_offsets [%d %d] hold %d bytes, shape %v of %s needs %d", b, e, e-b, *info.Shape, dt, size)}
		}
		spans = append(spans, span{name, b, e})
		entries[name] = stEntry{dtype: dt, shape: shape, begin: b, end: e}
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
			return nil, nil, &captureHeaderError{"header", fmt.Sprintf("data bytes [%d, %d) belong to no tensor", at, s.begin)}
		case s.begin < at:
			return nil, nil, &captureHeaderError{strconv.Quote(s.name), fmt.Sprintf("data_offsets [%d %d] overlap tensor %q", s.begin, s.end, prev)}
		}
		at, prev = s.end, s.name
	}
	if at != dataLen {
		return nil, nil, &captureHeaderError{"", fmt.Sprintf("tensors cover %d bytes, the data section holds %d (trailing bytes)", at, dataLen)}
	}
	return entries, meta, nil
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
	params, err := CaptureParamsJSON(c.Params)
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
	if c.Impl != "" {
		meta[MetaImpl] = c.Impl
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
// sets ID, Kernel, Family, Seed, Key and Generator from the metadata, and
// runs Kernel.Validate. Only kernel and params are required: a capture of a
// live call (the Python package's capture and record) may lack case (the
// case is then KERNEL/FILE-NAME, see captureFileCase), seed, key,
// generator and every got./want. tensor. It returns the case and the extra tensors: every
// tensor of the file that is not one of the case's inputs, by name.
//
// Nothing is read before it is bounded: the header length is checked
// against the file and MaxHeaderBytes before the header is read, and the
// header alone decides every tensor's size. FromTensors sees the tensors
// as the header declares them, with no Data, and checks their dtypes and
// shapes against the params and the kernel's size limits; every other
// tensor must have the dtype and shape of an output of that case. Only
// then are the declared bytes read (in all at most MaxSafetensorsData), and
// the case validated. A FIFO or a device is refused by its type.
//
// The generator version is checked for syntax only (a decimal integer ≥
// 1): a capture holds the input bytes themselves, so it replays exactly
// under any generator. Case.Generator keeps it; when it is not this
// build's GeneratorVersion, the record of the replay carries a warning
// (NewRecord) that `run` of the same seed and case id draws other inputs.
//
// Every error is a *CaptureError naming the file and the problem, and
// wraps ErrCapture (plus ErrInvalidInput when the kernel rejects the
// inputs): unreadable or malformed file, a missing or malformed metadata
// key, bad params JSON, an unknown kernel, a missing tensor or one of the
// wrong dtype or shape (as FromTensors and Validate report them), or an
// extra tensor that names no output of the case or disagrees with its
// dtype and shape.
func ReadCapture(path string) (*Case, map[string]*Tensor, error) {
	sf, err := openSafetensors(path)
	if err != nil {
		return nil, nil, err
	}
	defer sf.close()
	meta := sf.meta
	fail := func(tensor, format string, args ...any) error {
		return &CaptureError{Path: path, Tensor: tensor, Rule: fmt.Sprintf(format, args...)}
	}
	for _, key := range []string{MetaKernel, MetaParams} {
		if meta[key] == "" {
			return nil, nil, fail(captureMetaName(key), "missing (required: kernel, params)")
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
	generator := 0
	if s, ok := meta[MetaGenerator]; ok {
		if generator, err = strconv.Atoi(s); err != nil || generator < 1 {
			return nil, nil, fail(captureMetaName(MetaGenerator), "must be a generator version, a decimal integer ≥ 1, got %q", s)
		}
	}
	name := meta[MetaKernel]
	k, ok := LookupKernel(name)
	if !ok {
		return nil, nil, fail(captureMetaName(MetaKernel), "%s", UnknownName("kernel", name, KernelNames()))
	}
	id := meta[MetaCase]
	if id == "" {
		// A capture of a live call (kerneldiff.capture/record) need not
		// name its case: it is the file's.
		id = name + "/" + captureFileCase(path)
	}
	if rest, ok := strings.CutPrefix(id, name+"/"); !ok || rest == "" {
		// A case id is kernel/name: one naming another kernel would replay,
		// and be reported, under that kernel's id.
		return nil, nil, fail(captureMetaName(MetaCase), "case id %q does not belong to kernel %s (want %s/NAME)", SafeLine(id), name, name)
	}
	feed := make(map[string]*Tensor, len(sf.entries))
	for n, e := range sf.entries {
		if !strings.HasPrefix(n, GotPrefix) && !strings.HasPrefix(n, WantPrefix) {
			feed[n] = e.placeholder(n)
		}
	}
	c, err := k.FromTensors(id, params, feed)
	if err != nil {
		return nil, nil, &CaptureError{Path: path, Rule: "kernel " + name + " rejects the tensors", Err: err}
	}
	if c == nil {
		return nil, nil, fail("", "kernel %s rebuilt no case", name)
	}
	c.ID, c.Kernel, c.Seed, c.Key, c.Generator = id, name, seed, key, generator
	if f, ok := meta[MetaFamily]; ok {
		c.Family = f
	}
	if s, ok := meta[MetaImpl]; ok {
		if s == "" || SafeText(s) != s {
			return nil, nil, fail(captureMetaName(MetaImpl), "must be an --impl value, one line of printable text, got %q", s)
		}
		c.Impl = s
	}
	// What is read next is what the header declares: the case's inputs
	// (bounded by FromTensors) and the extras (bounded by the outputs).
	var total uint64
	for _, in := range c.Inputs {
		e, ok := sf.entries[in.Name]
		if !ok || e.dtype != in.DType || !slices.Equal(e.shape, in.Shape) {
			return nil, nil, fail(strconv.Quote(in.Name), "kernel %s rebuilt input %s%v, which the file does not declare", name, in.DType, in.Shape)
		}
		total += e.end - e.begin
	}
	var extras []string
	for n, e := range sf.entries {
		if c.Input(n) != nil {
			continue
		}
		if err := captureCheckExtra(c, e.placeholder(n)); err != nil {
			return nil, nil, fail(strconv.Quote(n), "%v", err)
		}
		extras = append(extras, n)
		total += e.end - e.begin
	}
	if total > MaxSafetensorsData {
		return nil, nil, fail("", "the case's tensors hold %d bytes, above the limit of %d (MaxSafetensorsData)", total, uint64(MaxSafetensorsData))
	}
	for _, in := range c.Inputs {
		t, err := sf.read(in.Name)
		if err != nil {
			return nil, nil, err
		}
		in.Data = t.Data
	}
	if err := k.Validate(c); err != nil {
		return nil, nil, &CaptureError{Path: path, Err: err}
	}
	extra := make(map[string]*Tensor, len(extras))
	for _, n := range extras {
		t, err := sf.read(n)
		if err != nil {
			return nil, nil, err
		}
		extra[n] = t
	}
	return c, extra, nil
}

// captureFileCase names the case of a capture without a "case" key after
// its file: the base name without ".safetensors", every run of characters
// outside [A-Za-z0-9._=-] made one "_".
func captureFileCase(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".safetensors")
	if s := strings.Trim(captureNameRE.ReplaceAllString(base, "_"), "_"); s != "" {
		return s
	}
	return "capture"
}

var captureNameRE = regexp.MustCompile(`[^A-Za-z0-9._=-]+`)

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

// CaptureParamsJSON renders a case's Params for the "params" metadata key.
func CaptureParamsJSON(p any) (string, error) {
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

// CaptureOneLine folds a multi-line text into one line for reports: lines are
// trimmed, blank ones dropped, the rest joined with " | ".
func CaptureOneLine(s string) string {
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
