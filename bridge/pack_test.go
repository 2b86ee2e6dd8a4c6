package bridge

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/cuda"
	"github.com/kerneldiff/kerneldiff/difftest"
)

// The packed structs must match the C layout the kernels were compiled
// against (x86-64 and aarch64 LP64: 8-byte pointers and int64, natural
// alignment). Offsets are worked out by hand from topk.h / normrope.h.

func u64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
func i32(b []byte, off int) int32  { return int32(binary.LittleEndian.Uint32(b[off:])) }

func topkTensors(batch, stride, maxPages, k int, raw bool) map[string]devTensor {
	ts := map[string]devTensor{
		"scores":       {difftest.F32, []int{batch, stride}, 0x1000},
		"seq_lens":     {difftest.I32, []int{batch}, 0x2000},
		"page_table":   {difftest.I32, []int{batch, maxPages}, 0x3000},
		"page_indices": {difftest.I32, []int{batch, k}, 0x4000},
	}
	if raw {
		ts["raw_indices"] = devTensor{difftest.I32, []int{batch, k}, 0x5000}
	}
	return ts
}

func TestPackTopkLayout(t *testing.T) {
	if topkParamsSize != 72 {
		t.Fatalf("sizeof(kd_topk_params) = %d, want 72 (5 pointers, 2 int64, 4 int32)", topkParamsSize)
	}
	l, err := packTopk([]byte(`{"K":1024,"P":64,"return_raw":true,"batch":3}`), topkTensors(3, 70000, 1094, 1024, true))
	if err != nil {
		t.Fatal(err)
	}
	if l.Entry != "kd_topk_transform_1024" || l.Grid != (cuda.Dim3{X: 3, Y: 1, Z: 1}) || l.Block.X == 0 || l.Block.Y != 1 {
		t.Fatalf("launch %+v", l)
	}
	a := l.Args[0]
	want := []struct {
		field string
		got   uint64
		want  uint64
	}{
		{"scores", u64(a, 0), 0x1000}, {"seq_lens", u64(a, 8), 0x2000}, {"page_table", u64(a, 16), 0x3000},
		{"page_indices", u64(a, 24), 0x4000}, {"raw_indices", u64(a, 32), 0x5000},
		{"stride", u64(a, 40), 70000}, {"max_pages", u64(a, 48), 1094},
		{"batch", uint64(i32(a, 56)), 3}, {"log2_page", uint64(i32(a, 60)), 6}, {"k", uint64(i32(a, 64)), 1024},
		{"score_dtype", uint64(i32(a, 68)), 0},
	}
	for _, w := range want {
		if w.got != w.want {
			t.Errorf("%s = %#x, want %#x", w.field, w.got, w.want)
		}
	}
	// Without raw_indices the pointer is NULL.
	l, err = packTopk([]byte(`{"K":512,"P":1}`), topkTensors(1, 600, 600, 512, false))
	if err != nil {
		t.Fatal(err)
	}
	if u64(l.Args[0], 32) != 0 || i32(l.Args[0], 60) != 0 || l.Entry != "kd_topk_transform_512" {
		t.Errorf("raw_indices %#x, log2_page %d, entry %s", u64(l.Args[0], 32), i32(l.Args[0], 60), l.Entry)
	}
	// 16-bit scores: score_dtype names the scores dtype and is packed at
	// offset 68 (KD_TOPK_SCORES_BF16 = 1, _F16 = 2); a tensor of another
	// dtype, or an unknown score_dtype, is an error.
	for _, tc := range []struct {
		dtype string
		dt    difftest.DType
		code  int32
	}{{"bf16", difftest.BF16, 1}, {"f16", difftest.F16, 2}, {"f32", difftest.F32, 0}} {
		ts := topkTensors(2, 16384, 2048, 512, true)
		ts["scores"] = devTensor{tc.dt, []int{2, 16384}, 0x1000}
		l, err = packTopk([]byte(`{"K":512,"P":8,"return_raw":true,"score_dtype":"`+tc.dtype+`"}`), ts)
		if err != nil {
			t.Fatalf("%s: %v", tc.dtype, err)
		}
		if got := i32(l.Args[0], 68); got != tc.code || u64(l.Args[0], 40) != 16384 || i32(l.Args[0], 60) != 3 {
			t.Errorf("%s: score_dtype %d, stride %d, log2_page %d; want %d, 16384, 3", tc.dtype, got, u64(l.Args[0], 40), i32(l.Args[0], 60), tc.code)
		}
	}
	if _, err = packTopk([]byte(`{"K":512,"P":8,"score_dtype":"bf16"}`), topkTensors(1, 600, 75, 512, false)); err == nil || !strings.Contains(err.Error(), "scores") {
		t.Errorf("F32 scores under score_dtype bf16: %v", err)
	}
	if _, err = packTopk([]byte(`{"K":512,"P":8,"score_dtype":"f8"}`), topkTensors(1, 600, 75, 512, false)); err == nil || !strings.Contains(err.Error(), "score_dtype") {
		t.Errorf("score_dtype f8: %v", err)
	}
	// An empty batch launches nothing.
	l, err = packTopk([]byte(`{"K":2048,"P":1}`), topkTensors(0, 4, 4, 2048, false))
	if err != nil || l.Grid.X != 0 {
		t.Errorf("empty batch: %+v, %v", l.Grid, err)
	}
}

func TestPackTopkErrors(t *testing.T) {
	tests := []struct {
		name   string
		params string
		edit   func(ts map[string]devTensor)
		want   string
	}{
		{"K without an entry point", `{"K":4,"P":1}`, nil, "K: the CUDA kernel instantiates K = 512, 1024, 2048 only, got 4"},
		{"P not a power of two", `{"K":512,"P":48}`, nil, "P: page size must be a power of two in [1, 2^30], got 48"},
		{"P zero", `{"K":512,"P":0}`, nil, "got 0"},
		{"seq_lens too short", `{"K":512,"P":1}`, func(ts map[string]devTensor) { ts["seq_lens"] = devTensor{difftest.I32, []int{1}, 0} }, "seq_lens: dimension 0 is 1, must equal batch (rows of scores) = 2"},
		{"scores as bf16", `{"K":512,"P":1}`, func(ts map[string]devTensor) { ts["scores"] = devTensor{difftest.BF16, []int{2, 600}, 0} }, "scores: dtype must be F32, got BF16"},
		{"output K mismatch", `{"K":1024,"P":1}`, nil, "page_indices: dimension 1 is 512, must equal K = 1024"},
		{"raw asked, not given", `{"K":512,"P":1,"return_raw":true}`, nil, "raw_indices: params ask for raw indices"},
		{"no page_table", `{"K":512,"P":1}`, func(ts map[string]devTensor) { delete(ts, "page_table") }, "page_table: missing from the case"},
		{"params not JSON object", `[1]`, nil, "params: topk_transform params do not decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := topkTensors(2, 600, 600, 512, false)
			if tt.edit != nil {
				tt.edit(ts)
			}
			_, err := packTopk([]byte(tt.params), ts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), difftest.ErrInvalidInput.Error()) {
				t.Errorf("error %q is not an InputError", err)
			}
		})
	}
}

func normTensors(n, stride, maxPos, pages, pageBytes int, bias bool) map[string]devTensor {
	ts := map[string]devTensor{
		"x":         {difftest.BF16, []int{n, stride}, 0x10000},
		"weight":    {difftest.F32, []int{128}, 0x20000},
		"freqs":     {difftest.F32, []int{maxPos, 64}, 0x40000},
		"positions": {difftest.I64, []int{n}, 0x50000},
		"out_loc":   {difftest.I64, []int{n}, 0x60000},
		"cache":     {difftest.U8, []int{pages, pageBytes}, 0x70000},
	}
	if bias {
		ts["bias"] = devTensor{difftest.F32, []int{128}, 0x30000}
	}
	return ts
}

func TestPackNormRopeLayout(t *testing.T) {
	if normRopeParamsSize != 128 {
		t.Fatalf("sizeof(kd_normrope_params) = %d, want 128 (7 pointers, 4 int64, f32, 8 int32, padding)", normRopeParamsSize)
	}
	v32 := `{"norm":"layer","rope_offset":0,"rope_style":"neox","hadamard":true,"store":"fp8","scale_fmt":"ue8m0","page_size":64,"num_pages":3,"eps":1e-6}`
	l, err := packNormRope([]byte(v32), normTensors(9, 160, 4096, 3, 132*64, true))
	if err != nil {
		t.Fatal(err)
	}
	if l.Entry != "kd_norm_rope_store" || l.Grid.X != 2 || l.Block.X != 256 {
		t.Fatalf("launch %+v: 9 tokens at 8 per block need 2 blocks of 256 threads", l)
	}
	a := l.Args[0]
	ptrs := []uint64{0x10000, 0x20000, 0x30000, 0x40000, 0x50000, 0x60000, 0x70000}
	for i, p := range ptrs {
		if u64(a, 8*i) != p {
			t.Errorf("pointer %d = %#x, want %#x", i, u64(a, 8*i), p)
		}
	}
	ints := []struct {
		field     string
		off       int
		got, want int64
	}{
		{"x_stride", 56, int64(u64(a, 56)), 160}, {"num_tokens", 64, int64(u64(a, 64)), 9},
		{"max_pos", 72, int64(u64(a, 72)), 4096}, {"num_pages", 80, int64(u64(a, 80)), 3},
		{"log2_page", 92, int64(i32(a, 92)), 6}, {"norm", 96, int64(i32(a, 96)), 1},
		{"rope_offset", 100, int64(i32(a, 100)), 0}, {"rope_style", 104, int64(i32(a, 104)), 0},
		{"hadamard", 108, int64(i32(a, 108)), 1}, {"store", 112, int64(i32(a, 112)), 0},
		{"scale_fmt", 116, int64(i32(a, 116)), 1}, {"stages", 120, int64(i32(a, 120)), 0},
	}
	for _, w := range ints {
		if w.got != w.want {
			t.Errorf("%s (offset %d) = %d, want %d", w.field, w.off, w.got, w.want)
		}
	}
	if eps := math.Float32frombits(binary.LittleEndian.Uint32(a[88:])); eps != 1e-6 {
		t.Errorf("eps = %g", eps)
	}
	// v4-bf16 without bias: NULL bias, interleaved, offset 64, BF16 pages.
	v4 := `{"norm":"rms","rope_offset":64,"rope_style":"interleaved","hadamard":true,"store":"bf16","scale_fmt":"plain","page_size":1,"num_pages":5,"eps":1e-6}`
	l, err = packNormRope([]byte(v4), normTensors(8, 128, 10, 5, 256, false))
	if err != nil {
		t.Fatal(err)
	}
	a = l.Args[0]
	if u64(a, 16) != 0 || i32(a, 96) != 0 || i32(a, 100) != 64 || i32(a, 104) != 1 || i32(a, 112) != 1 || l.Grid.X != 1 {
		t.Errorf("v4-bf16 packed bias %#x norm %d off %d style %d store %d grid %d", u64(a, 16), i32(a, 96), i32(a, 100), i32(a, 104), i32(a, 112), l.Grid.X)
	}
	store := strings.Replace(v4, `"norm"`, `"stages":"store","norm"`, 1)
	if l, err = packNormRope([]byte(store), normTensors(8, 128, 10, 5, 256, false)); err != nil || i32(l.Args[0], 120) != 1 {
		t.Errorf("stages store: packed %d, %v; want KD_STAGES_STORE (1)", i32(l.Args[0], 120), err)
	}
	if _, err = packNormRope([]byte(strings.Replace(store, `"store","norm"`, `"norm","norm"`, 1)), normTensors(8, 128, 10, 5, 256, false)); err == nil || !strings.Contains(err.Error(), "stages") {
		t.Errorf("stages norm: error %v, want one naming stages", err)
	}
	l, err = packNormRope([]byte(v4), normTensors(0, 128, 10, 5, 256, false))
	if err != nil || l.Grid.X != 0 {
		t.Errorf("N = 0: %+v, %v", l.Grid, err)
	}
}

func TestPackNormRopeErrors(t *testing.T) {
	base := `"rope_offset":64,"rope_style":"interleaved","hadamard":false,"store":"fp8","scale_fmt":"plain","page_size":2,"num_pages":4,"eps":1e-6`
	tests := []struct {
		name   string
		params string
		edit   func(ts map[string]devTensor)
		want   string
	}{
		{"layer norm without bias", `{"norm":"layer",` + base + `}`, nil, "bias: LayerNorm needs a bias tensor"},
		{"unknown norm", `{"norm":"group",` + base + `}`, nil, `norm: unknown value "group"`},
		{"rope offset 32", `{"norm":"rms","rope_offset":32,"rope_style":"neox","store":"fp8","scale_fmt":"plain","page_size":2,"eps":1e-6}`, nil, "rope_offset: must be 0 or 64, got 32"},
		{"eps zero", `{"norm":"rms","rope_offset":0,"rope_style":"neox","store":"fp8","scale_fmt":"plain","page_size":2,"eps":0}`, nil, "eps: must be finite and > 0"},
		{"cache page bytes for bf16", `{"norm":"rms",` + strings.Replace(base, `"fp8"`, `"bf16"`, 1) + `}`, nil, "cache: dimension 1 is 264, must equal page bytes for store bf16 and P = 512"},
		{"x stride below 128", `{"norm":"rms",` + base + `}`, func(ts map[string]devTensor) { ts["x"] = devTensor{difftest.BF16, []int{4, 64}, 0} }, "x: row stride (dimension 1) must be ≥ 128, got 64"},
		{"positions short", `{"norm":"rms",` + base + `}`, func(ts map[string]devTensor) { ts["positions"] = devTensor{difftest.I64, []int{3}, 0} }, "positions: dimension 0 is 3, must equal N (rows of x) = 4"},
		{"freqs not 64 wide", `{"norm":"rms",` + base + `}`, func(ts map[string]devTensor) { ts["freqs"] = devTensor{difftest.F32, []int{10, 32}, 0} }, "freqs: dimension 1 is 32"},
		{"out_loc as i32", `{"norm":"rms",` + base + `}`, func(ts map[string]devTensor) { ts["out_loc"] = devTensor{difftest.I32, []int{4}, 0} }, "out_loc: dtype must be I64, got I32"},
		{"num_pages disagrees", `{"norm":"rms",` + strings.Replace(base, `"num_pages":4`, `"num_pages":5`, 1) + `}`, nil, "cache: dimension 0 is 4, must equal num_pages = 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := normTensors(4, 128, 10, 4, 264, false)
			if tt.edit != nil {
				tt.edit(ts)
			}
			_, err := packNormRope([]byte(tt.params), ts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func logitsTensors(batch, heads, stride, maxPages, numPages, pageBytes int, qType difftest.DType) map[string]devTensor {
	return map[string]devTensor{
		"q":          {qType, []int{batch, heads, 128}, 0x10000},
		"weights":    {difftest.F32, []int{batch, heads}, 0x20000},
		"cache":      {difftest.U8, []int{numPages, pageBytes}, 0x30000},
		"seq_lens":   {difftest.I32, []int{batch}, 0x40000},
		"page_table": {difftest.I32, []int{batch, maxPages}, 0x50000},
		"logits":     {difftest.F32, []int{batch, stride}, 0x60000},
	}
}

func TestPackLogitsLayout(t *testing.T) {
	if logitsParamsSize != 112 {
		t.Fatalf("sizeof(kd_logits_params) = %d, want 112 (6 pointers, 3 int64, 6 int32, then page_stride int64, next_n and logits_bf16 int32)", logitsParamsSize)
	}
	params := `{"store":"fp8","page_size":64,"heads":16,"clean":true,"accum_bits":24,"batch":3,"stride":130,"max_pages":3,"num_pages":9,"family":"gaussian"}`
	l, err := packLogits([]byte(params), logitsTensors(3, 16, 130, 3, 9, 132*64, difftest.U8))
	if err != nil {
		t.Fatal(err)
	}
	// 130 positions: 3 tiles of 64 per row, 3 rows.
	if l.Entry != "kd_indexer_logits" || l.Grid != (cuda.Dim3{X: 9, Y: 1, Z: 1}) || l.Block != (cuda.Dim3{X: 256, Y: 1, Z: 1}) {
		t.Fatalf("launch %+v", l)
	}
	a := l.Args[0]
	for i, p := range []uint64{0x10000, 0x20000, 0x30000, 0x40000, 0x50000, 0x60000} {
		if u64(a, 8*i) != p {
			t.Errorf("pointer %d = %#x, want %#x", i, u64(a, 8*i), p)
		}
	}
	for _, w := range []struct {
		field     string
		got, want int64
	}{
		{"stride", int64(u64(a, 48)), 130}, {"max_pages", int64(u64(a, 56)), 3}, {"num_pages", int64(u64(a, 64)), 9},
		{"batch", int64(i32(a, 72)), 3}, {"heads", int64(i32(a, 76)), 16}, {"log2_page", int64(i32(a, 80)), 6},
		{"store", int64(i32(a, 84)), 0}, {"clean", int64(i32(a, 88)), 1}, {"tiles", int64(i32(a, 92)), 3},
		{"page_stride", int64(u64(a, 96)), 132 * 64}, {"next_n", int64(i32(a, 104)), 1}, {"logits_bf16", int64(i32(a, 108)), 0},
	} {
		if w.got != w.want {
			t.Errorf("%s = %d, want %d", w.field, w.got, w.want)
		}
	}
	// BF16, not clean, P = 16: bf16 queries, 256·P pages.
	l, err = packLogits([]byte(`{"store":"bf16","page_size":16,"heads":1,"clean":false}`), logitsTensors(1, 1, 64, 4, 4, 256*16, difftest.BF16))
	if err != nil {
		t.Fatal(err)
	}
	if i32(l.Args[0], 84) != 1 || i32(l.Args[0], 88) != 0 || i32(l.Args[0], 80) != 4 || l.Grid.X != 1 {
		t.Errorf("bf16: store %d clean %d log2_page %d grid %d", i32(l.Args[0], 84), i32(l.Args[0], 88), i32(l.Args[0], 80), l.Grid.X)
	}
	// FP4, next_n = 2, padded pages, bf16 logits: q [B, 2, H, 68], seq_lens
	// [B, 2], weights and logits of B·2 rows; grid = rows · tiles.
	ts := logitsTensors(3, 8, 130, 3, 9, 4608, difftest.U8)
	ts["q"] = devTensor{difftest.U8, []int{3, 2, 8, 68}, 0x10000}
	ts["weights"] = devTensor{difftest.F32, []int{6, 8}, 0x20000}
	ts["seq_lens"] = devTensor{difftest.I32, []int{3, 2}, 0x40000}
	ts["logits"] = devTensor{difftest.BF16, []int{6, 130}, 0x60000}
	l, err = packLogits([]byte(`{"store":"fp4","page_size":64,"heads":8,"clean":true,"next_n":2,"page_stride":4608,"logits_dtype":"bf16"}`), ts)
	if err != nil {
		t.Fatal(err)
	}
	if a := l.Args[0]; i32(a, 84) != 2 || i32(a, 72) != 3 || u64(a, 96) != 4608 || i32(a, 104) != 2 || i32(a, 108) != 1 || l.Grid.X != 18 {
		t.Errorf("fp4: store %d batch %d page_stride %d next_n %d logits_bf16 %d grid %d; want 2 3 4608 2 1 18",
			i32(a, 84), i32(a, 72), u64(a, 96), i32(a, 104), i32(a, 108), l.Grid.X)
	}
	// An empty batch launches nothing.
	l, err = packLogits([]byte(params), logitsTensors(0, 16, 130, 3, 9, 132*64, difftest.U8))
	if err != nil || l.Grid.X != 0 {
		t.Errorf("empty batch: %+v, %v", l.Grid, err)
	}
}

func TestPackLogitsErrors(t *testing.T) {
	base := `"page_size":64,"clean":true`
	tests := []struct {
		name   string
		params string
		edit   func(ts map[string]devTensor)
		want   string
	}{
		{"unknown store", `{"store":"fp6","heads":4,` + base + `}`, nil, `store: unknown value "fp6"`},
		{"next_n 17", `{"store":"fp8","heads":4,"next_n":17,` + base + `}`, nil, "next_n: the CUDA kernel takes 1 to 16 rows per request"},
		{"page_stride below tight", `{"store":"fp8","heads":4,"page_stride":8444,` + base + `}`, nil, "page_stride: must be a multiple of 4 ≥ the tight page bytes 8448"},
		{"page_stride odd", `{"store":"fp8","heads":4,"page_stride":8450,` + base + `}`, nil, "page_stride: must be a multiple of 4"},
		{"unknown logits_dtype", `{"store":"fp8","heads":4,"logits_dtype":"f16",` + base + `}`, nil, `logits_dtype: unknown value "f16"`},
		{"f32 logits for bf16 logits_dtype", `{"store":"fp8","heads":4,"logits_dtype":"bf16",` + base + `}`, nil, "logits: dtype must be BF16, got F32"},
		{"128 heads", `{"store":"fp8","heads":128,` + base + `}`, nil, "H: the CUDA kernel takes 1 to 64 heads (KD_LOGITS_MAX_HEADS), got 128"},
		{"P not a power of two", `{"store":"fp8","heads":4,"page_size":48}`, nil, "P: page size must be a power of two"},
		{"bf16 cache for the fp8 store", `{"store":"fp8","heads":4,` + base + `}`, func(ts map[string]devTensor) {
			ts["cache"] = devTensor{difftest.U8, []int{2, 256 * 64}, 0}
		}, "cache: dimension 1 is 16384, must equal page bytes for store fp8 and P = 8448"},
		{"bf16 queries for the fp8 store", `{"store":"fp8","heads":4,` + base + `}`, func(ts map[string]devTensor) {
			ts["q"] = devTensor{difftest.BF16, []int{2, 4, 128}, 0}
		}, "q: dtype must be U8, got BF16"},
		{"weights of other heads", `{"store":"fp8","heads":4,` + base + `}`, func(ts map[string]devTensor) {
			ts["weights"] = devTensor{difftest.F32, []int{2, 5}, 0}
		}, "weights: dimension 1 is 5, must equal H = 4"},
		{"seq_lens short", `{"store":"fp8","heads":4,` + base + `}`, func(ts map[string]devTensor) {
			ts["seq_lens"] = devTensor{difftest.I32, []int{1}, 0}
		}, "seq_lens: dimension 0 is 1, must equal batch (rows of logits) = 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := logitsTensors(2, 4, 100, 2, 2, 132*64, difftest.U8)
			if tt.edit != nil {
				tt.edit(ts)
			}
			_, err := packLogits([]byte(tt.params), ts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
