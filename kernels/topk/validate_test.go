package topk

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// TestValidate covers every rule of Validate with the exact error text.
func TestValidate(t *testing.T) {
	// A valid base: K = 4, P = 2, two rows of stride 8, max_pages 4.
	base := func(t *testing.T) *difftest.Case {
		row := []uint32{fb(1), fb(2), fb(3), fb(4), fb(5), fb(6), fb(7), fb(8)}
		return handCase(t, 4, 2, true, [][]uint32{row, row}, []int32{8, 5}, [][]int32{{0, 1, 2, 3}, {4, 5, 6, -1}})
	}
	params := func(c *difftest.Case) *Params { return c.Params.(*Params) }
	tests := []struct {
		name, reason string
		edit         func(c *difftest.Case)
		want         string
	}{
		{"valid", "the base case", func(*difftest.Case) {}, ""},
		{"negative-seq-len", "L_b ≥ 0", func(c *difftest.Case) { c.Inputs[1].SetI32(1, -1) },
			"invalid input: seq_lens[1]: must be ≥ 0, got -1"},
		{"seq-len-beyond-stride", "L_b ≤ stride", func(c *difftest.Case) { c.Inputs[1].SetI32(0, 9) },
			"invalid input: seq_lens[0]: must be ≤ the scores row stride 8, got 9"},
		{"table-too-short", "max_pages ≥ ceil(L/P)", func(c *difftest.Case) {
			p := params(c)
			p.P = 1
		}, "invalid input: page_table[0]: too short: seq_lens[0] = 8 needs ceil(8/1) = 8 pages, the row has max_pages = 4"},
		{"P-not-pow2", "P is a power of two", func(c *difftest.Case) { params(c).P = 3 },
			"invalid input: P: page size must be a power of two ≥ 1, got 3"},
		{"P-zero", "P ≥ 1", func(c *difftest.Case) { params(c).P = 0 },
			"invalid input: P: page size must be a power of two ≥ 1, got 0"},
		{"K-zero", "K ≥ 1", func(c *difftest.Case) { params(c).K = 0 },
			"invalid input: K: must be ≥ 1, got 0"},
		{"K-limit", "K ≤ MaxK (a capture with K = 2^40 ran out of memory)", func(c *difftest.Case) { params(c).K = 1 << 40 },
			"invalid input: K: exceeds the limit of 65536 picks per row: got 1099511627776"},
		{"P-limit", "P ≤ MaxPageSize (id·P stays far from int64 overflow)", func(c *difftest.Case) { params(c).P = 1 << 40 },
			"invalid input: P: exceeds the limit of 1048576 slots per page: got 1099511627776"},
		{"batch-limit", "batch ≤ MaxBatch", func(c *difftest.Case) { params(c).Batch = MaxBatch + 1 },
			"invalid input: batch: exceeds the limit of 65536 rows: got 65537"},
		{"batch-negative", "batch ≥ 0", func(c *difftest.Case) { params(c).Batch = -1 },
			"invalid input: batch: must be ≥ 0, got -1"},
		{"stride-limit", "stride ≤ MaxSeqLen", func(c *difftest.Case) { params(c).Stride = MaxSeqLen + 1 },
			"invalid input: stride: exceeds the limit of 16777216 scores per row: got 16777217"},
		{"max-pages-limit", "max_pages ≤ MaxPages", func(c *difftest.Case) { params(c).MaxPages = MaxPages + 1 },
			"invalid input: max_pages: exceeds the limit of 16777216 page-table entries per row: got 16777217"},
		{"scores-limit", "batch·stride ≤ MaxScores", func(c *difftest.Case) { params(c).Batch, params(c).Stride = 1<<14, 1<<15 },
			"invalid input: batch·stride: exceeds the limit of 268435456 scores: got 536870912"},
		{"table-limit", "batch·max_pages ≤ MaxTableEntries", func(c *difftest.Case) { params(c).Batch, params(c).Stride, params(c).MaxPages = 1<<14, 8, 1<<15 },
			"invalid input: batch·max_pages: exceeds the limit of 268435456 page-table entries: got 536870912"},
		{"outputs-limit", "batch·K ≤ MaxOutputEntries", func(c *difftest.Case) { params(c).Batch, params(c).Stride, params(c).K = 1<<14, 8, 1<<13 },
			"invalid input: batch·K: exceeds the limit of 67108864 entries per output: got 134217728"},
		{"negative-page", "used page ids ≥ 0", func(c *difftest.Case) { c.Inputs[2].SetI32(4+2, -7) },
			"invalid input: page_table[1][2]: page id must be ≥ 0 within the used range (j < 3), got -7"},
		{"unused-negative-ok", "entries past ceil(L/P) are never read", func(c *difftest.Case) { c.Inputs[2].SetI32(4+3, -9) }, ""},
		{"slot-overflow", "slot computed in 64-bit must fit int32", func(c *difftest.Case) { c.Inputs[2].SetI32(3, 1<<30) },
			"invalid input: page_table[0][3]: slot 1073741824·2 + 1 = 2147483649 does not fit in int32"},
		{"slot-at-limit", "the largest int32 slot is valid", func(c *difftest.Case) { c.Inputs[2].SetI32(3, 1<<30-1) }, ""},
		{"duplicate-page-raw", "repeats are allowed when raw_indices is returned", func(c *difftest.Case) { c.Inputs[2].SetI32(1, 0) }, ""},
		{"duplicate-page-noraw", "without raw the table must be injective", func(c *difftest.Case) {
			p := params(c)
			p.ReturnRaw = false
			c.Outputs = p.Outputs()
			c.Inputs[2].SetI32(3, 1)
		}, "invalid input: page_table[0][3]: page id 1 repeats page_table[0][1]; without raw_indices the used range must be injective (the checker inverts it)"},
		{"scores-dtype", "scores is f32", func(c *difftest.Case) { c.Inputs[0].DType = difftest.I32 },
			"invalid input: scores: dtype must be F32, got I32"},
		{"seq-lens-shape", "seq_lens is [batch]", func(c *difftest.Case) {
			c.Inputs[1] = difftest.MustTensor(TensorSeqLens, difftest.I32, 3)
		}, "invalid input: seq_lens: shape must be [2] (from the params), got [3]"},
		{"table-shape", "page_table is [batch, max_pages]", func(c *difftest.Case) { params(c).MaxPages = 5 },
			"invalid input: page_table: shape must be [2 5] (from the params), got [2 4]"},
		{"missing-input", "every input is present", func(c *difftest.Case) { c.Inputs = c.Inputs[:2] },
			"invalid input: page_table: missing input tensor"},
		{"outputs", "outputs match return_raw", func(c *difftest.Case) { c.Outputs = c.Outputs[:1] },
			"invalid input: outputs: must be 2 tensors (return_raw = true), got 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base(t)
			tt.edit(c)
			err := Validate(c)
			got := ""
			if err != nil {
				got = err.Error()
				var ie *difftest.InputError
				if !errors.As(err, &ie) || !errors.Is(err, difftest.ErrInvalidInput) {
					t.Errorf("%s: error %T does not wrap ErrInvalidInput", tt.reason, err)
				}
			}
			if got != tt.want {
				t.Errorf("%s:\n got %q\nwant %q", tt.reason, got, tt.want)
			}
			if err != nil {
				// Reference and every mutant refuse the case the same way.
				if rerr := Reference(c, newOuts(c)); rerr == nil || rerr.Error() != got {
					t.Errorf("Reference error %v, want the Validate error", rerr)
				}
			}
		})
	}
}

// TestFromTensorsLimits: a capture whose params ask for an absurd size is
// rejected by FromTensors before any output is declared.
func TestFromTensorsLimits(t *testing.T) {
	row := []uint32{fb(1), fb(2), fb(3)}
	c := handCase(t, 2, 1, true, [][]uint32{row}, []int32{3}, [][]int32{{0, 1, 2}})
	m := map[string]*difftest.Tensor{}
	for _, in := range c.Inputs {
		m[in.Name] = in
	}
	tests := []struct{ params, want string }{
		{`{"K": 2, "P": 1, "return_raw": true}`, ""},
		{`{"K": 1099511627776, "P": 1}`, "invalid input: K: exceeds the limit of 65536 picks per row: got 1099511627776"},
		{`{"K": 0, "P": 1}`, "invalid input: K: must be ≥ 1, got 0"},
		{`{"K": 2, "P": 3}`, "invalid input: P: page size must be a power of two ≥ 1, got 3"},
	}
	for _, tt := range tests {
		got, err := FromTensors("topk_transform/cap", json.RawMessage(tt.params), m)
		msg := ""
		if err != nil {
			msg = err.Error()
			if !errors.Is(err, difftest.ErrInvalidInput) {
				t.Errorf("%s: %v does not wrap ErrInvalidInput", tt.params, err)
			}
		}
		if msg != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.params, msg, tt.want)
		}
		if err == nil {
			if err := Validate(got); err != nil {
				t.Errorf("%s: %v", tt.params, err)
			}
		}
	}
}

func TestCheckEntryPointK(t *testing.T) {
	for _, k := range []int{512, 1024, 2048} {
		if err := CheckEntryPointK(k); err != nil {
			t.Errorf("K=%d: %v", k, err)
		}
	}
	err := CheckEntryPointK(4)
	if err == nil || err.Error() != "invalid input: K: no CUDA entry point for K = 4 (instantiated: 512, 1024, 2048)" {
		t.Errorf("K=4: %v", err)
	}
}
