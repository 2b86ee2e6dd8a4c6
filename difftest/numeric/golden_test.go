// Golden tables from an independent implementation (numpy for binary16,
// ml_dtypes for bfloat16 and float8_e4m3fn), made by
// testdata/gen_golden.py. They are rewritten only by
//
//	GOLDEN_PYTHON=/path/to/venv/python go test ./difftest/numeric -run Golden -update
//
// and the diff is reviewed like code.

package numeric

import (
	"bufio"
	"compress/gzip"
	"flag"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata golden tables with testdata/gen_golden.py ($GOLDEN_PYTHON, default python3, needs numpy and ml_dtypes)")

var regenOnce sync.Once
var regenErr error

// goldenRows returns the data rows of a golden table, each split into hex
// fields, after regenerating the tables once when -update is set.
func goldenRows(t *testing.T, name string, fields int) [][]uint64 {
	t.Helper()
	if *update {
		regenOnce.Do(func() {
			py := os.Getenv("GOLDEN_PYTHON")
			if py == "" {
				py = "python3"
			}
			cmd := exec.Command(py, filepath.Join("testdata", "gen_golden.py"), "testdata")
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			regenErr = cmd.Run()
		})
		if regenErr != nil {
			t.Fatalf("-update: gen_golden.py: %v", regenErr)
		}
	}
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer gz.Close()
		r = gz
	}
	var rows [][]uint64
	sawVersions := false
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "#") {
			if strings.Contains(text, "ml_dtypes ") && strings.Contains(text, "numpy ") {
				sawVersions = true
			}
			continue
		}
		parts := strings.Fields(text)
		if len(parts) != fields {
			t.Fatalf("%s:%d: %d fields, want %d", name, line, len(parts), fields)
		}
		row := make([]uint64, fields)
		for i, p := range parts {
			v, err := strconv.ParseUint(p, 16, 64)
			if err != nil {
				t.Fatalf("%s:%d: %v", name, line, err)
			}
			row[i] = v
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !sawVersions {
		t.Fatalf("%s: header does not record the numpy and ml_dtypes versions", name)
	}
	return rows
}

// TestGoldenDecode16 checks BF16ToF32 (against ml_dtypes) and F16ToF32
// (against numpy) on all 65,536 patterns, bit for bit, NaN payloads
// included.
func TestGoldenDecode16(t *testing.T) {
	rows := goldenRows(t, "decode16.txt.gz", 3)
	if len(rows) != 1<<16 {
		t.Fatalf("decode16: %d rows, want 65536", len(rows))
	}
	bad := 0
	for i, r := range rows {
		if r[0] != uint64(i) {
			t.Fatalf("decode16 row %d holds pattern %04x", i, r[0])
		}
		if got := math.Float32bits(BF16ToF32(uint16(i))); uint64(got) != r[1] && bad < 10 {
			t.Errorf("BF16ToF32(%04x) = %08x, ml_dtypes %08x", i, got, r[1])
			bad++
		}
		if got := math.Float32bits(F16ToF32(uint16(i))); uint64(got) != r[2] && bad < 10 {
			t.Errorf("F16ToF32(%04x) = %08x, numpy %08x", i, got, r[2])
			bad++
		}
	}
}

// TestGoldenE4M3Decode checks E4M3ToF32 against ml_dtypes on all 256
// codes, bit for bit (both NaN codes decode to the quiet NaN with the
// code's sign in both).
func TestGoldenE4M3Decode(t *testing.T) {
	rows := goldenRows(t, "e4m3_decode.txt", 2)
	if len(rows) != 256 {
		t.Fatalf("e4m3_decode: %d rows, want 256", len(rows))
	}
	for i, r := range rows {
		if r[0] != uint64(i) {
			t.Fatalf("e4m3_decode row %d holds code %02x", i, r[0])
		}
		if got := math.Float32bits(E4M3ToF32(uint8(i))); uint64(got) != r[1] {
			t.Errorf("E4M3ToF32(%02x) = %08x, ml_dtypes %08x", i, got, r[1])
		}
	}
}

// TestGoldenEncodeF32 checks BF16FromF32, E4M3FromF32 and F16FromF32, and
// the f64 entry points on the exactly widened inputs, against the table.
// Agreement is bit for bit except for the deliberate differences listed in
// the package documentation, which are checked to be exactly those:
//
//   - e4m3fn, |x| > 464 or ±inf: ours saturates to 0x7E|sign, ml_dtypes
//     gives 0x7F|sign (NaN);
//   - e4m3fn, NaN: ours is always 0x7F, ml_dtypes keeps the sign (0xFF);
//   - binary16, NaN: ours is the quiet NaN 0x7E00|sign, numpy keeps the
//     top payload bits (a NaN of the same sign).
func TestGoldenEncodeF32(t *testing.T) {
	rows := goldenRows(t, "encode_f32.txt.gz", 4)
	if len(rows) < 10000 {
		t.Fatalf("encode_f32: %d rows, want ≥ 10000", len(rows))
	}
	var satDiff, nanSignDiff, f16NaN, bad int
	fail := func(format string, args ...any) {
		if bad < 20 {
			t.Errorf(format, args...)
		}
		bad++
	}
	for _, r := range rows {
		xb := uint32(r[0])
		x := math.Float32frombits(xb)
		wantBF, mlE4, npF16 := uint16(r[1]), uint8(r[2]), uint16(r[3])
		sign8 := uint8(xb>>24) & 0x80
		sign16 := uint16(xb>>16) & 0x8000

		if got := BF16FromF32(x); got != wantBF {
			fail("BF16FromF32(%08x) = %04x, ml_dtypes %04x", xb, got, wantBF)
		}
		if got := BF16FromF64(float64(x)); got != wantBF {
			fail("BF16FromF64(%08x widened) = %04x, ml_dtypes %04x", xb, got, wantBF)
		}

		wantE4 := mlE4
		switch {
		case x != x:
			if mlE4 != 0x7F|sign8 {
				fail("ml_dtypes e4m3fn(%08x) = %02x, documented as %02x", xb, mlE4, 0x7F|sign8)
			}
			wantE4 = 0x7F
			if sign8 != 0 {
				nanSignDiff++
			}
		case math.Abs(float64(x)) > 464:
			if mlE4 != 0x7F|sign8 {
				fail("ml_dtypes e4m3fn(%08x) = %02x, documented as NaN %02x", xb, mlE4, 0x7F|sign8)
			}
			wantE4 = 0x7E | sign8
			satDiff++
		}
		if got := E4M3FromF32(x); got != wantE4 {
			fail("E4M3FromF32(%08x) = %02x, want %02x (ml_dtypes %02x)", xb, got, wantE4, mlE4)
		}
		if got := E4M3FromF64(float64(x)); got != wantE4 {
			fail("E4M3FromF64(%08x widened) = %02x, want %02x", xb, got, wantE4)
		}

		wantF16 := npF16
		if x != x {
			if npF16&0x7FFF <= 0x7C00 || npF16&0x8000 != sign16 {
				fail("numpy float16(%08x) = %04x, documented as a NaN of the same sign", xb, npF16)
			}
			wantF16 = 0x7E00 | sign16
			f16NaN++
		}
		if got := F16FromF32(x); got != wantF16 {
			fail("F16FromF32(%08x) = %04x, want %04x (numpy %04x)", xb, got, wantF16, npF16)
		}
	}
	if bad > 0 {
		t.Errorf("%d mismatches in %d rows", bad, len(rows))
	}
	// The table must exercise every documented difference.
	if satDiff < 4 || nanSignDiff < 2 || f16NaN < 4 {
		t.Errorf("table covers too few documented differences: saturation %d, NaN sign %d, f16 NaN %d", satDiff, nanSignDiff, f16NaN)
	}
}
