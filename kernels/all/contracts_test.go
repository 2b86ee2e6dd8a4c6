package all_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/rng"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
	"github.com/kerneldiff/kerneldiff/fixtures"
	"github.com/kerneldiff/kerneldiff/kernels/all"
)

// maxCaseBytes bounds the cases the contract tests draw (input bytes).
const maxCaseBytes = 4 << 20

// quickCases returns the cases of kernel in the quick suite, drawn with
// seed 1, up to maxCaseBytes of inputs each.
func quickCases(t *testing.T, k difftest.Kernel) []*difftest.Case {
	t.Helper()
	s, err := suite.LoadSuiteFS(fixtures.Suites(), "quick")
	if err != nil {
		t.Fatal(err)
	}
	var cs []*difftest.Case
	for _, sc := range s.Cases {
		if sc.Spec.Kernel != k.Name() {
			continue
		}
		c, err := k.NewCase(sc.Spec, 1, rng.CaseKey(1, sc.Spec.ID()))
		if err != nil {
			t.Fatalf("%s: %v", sc.Spec.ID(), err)
		}
		n := 0
		for _, in := range c.Inputs {
			n += len(in.Data)
		}
		if n <= maxCaseBytes {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		t.Fatalf("the quick suite has no case of %s under %d bytes", k.Name(), maxCaseBytes)
	}
	return cs
}

// jsonKeys returns the JSON keys of the struct type of v (or *v).
func jsonKeys(v any) []string {
	rt := reflect.TypeOf(v)
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	var keys []string
	for i := 0; i < rt.NumField(); i++ {
		tag := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
		if tag != "" && tag != "-" {
			keys = append(keys, tag)
		}
	}
	sort.Strings(keys)
	return keys
}

// TestEveryKernelFolderRegisters checks the Go list of kernels: each
// folder all imports registers a kernel, and every kernel but a chain
// describes its contract for the Python package.
func TestEveryKernelFolderRegisters(t *testing.T) {
	ks := difftest.Kernels()
	if len(ks) != len(all.Dirs) {
		t.Fatalf("%d kernels registered from %d folders %v: each kernel folder registers exactly one", len(ks), len(all.Dirs), all.Dirs)
	}
	for _, k := range ks {
		_, chain := k.(difftest.Chain)
		_, desc := k.(difftest.ContractDescriber)
		if !chain && !desc {
			t.Errorf("%s implements neither difftest.ContractDescriber nor difftest.Chain (docs/adding-a-kernel.md)", k.Name())
		}
	}
}

// TestContractsDescribeTheCases checks each ContractDescriber against the
// kernel itself on the quick suite's cases: the inputs and their dtypes in
// contract order, the outputs OutputSpecs computes from the params JSON
// and the input shapes, each size param against its tensor's dimension,
// and the params keys (required ∪ optional = the
// keys of the params struct; a capture without a required key, whose value
// is not the zero value, is rejected by FromTensors or Validate, one with
// only the required keys is not).
func TestContractsDescribeTheCases(t *testing.T) {
	cs := difftest.Contracts()
	if len(cs) == 0 {
		t.Fatal("no kernel describes its contract")
	}
	for _, ci := range cs {
		t.Run(ci.Name, func(t *testing.T) {
			k, _ := difftest.LookupKernel(ci.Name)
			for _, c := range quickCases(t, k) {
				checkContract(t, k, ci, c)
			}
		})
	}
}

// checkContract checks ci against one case c of kernel k.
func checkContract(t *testing.T, k difftest.Kernel, ci difftest.ContractInfo, c *difftest.Case) {
	t.Helper()
	tensors := map[string]*difftest.Tensor{}
	shapes := map[string][]int{}
	var in, inout []difftest.TensorInfo
	for _, ti := range ci.Inputs {
		if ti.InOut {
			inout = append(inout, ti)
		} else {
			in = append(in, ti)
		}
	}
	if len(in) != len(c.Inputs) {
		t.Fatalf("%s: contract lists %d inputs, the case has %d", c.ID, len(in), len(c.Inputs))
	}
	for i, ti := range in {
		got := c.Inputs[i]
		if got.Name != ti.Name || !slices.Contains(ti.DTypes, got.DType) {
			t.Errorf("%s: input %d is %s %s, the contract says %s %v", c.ID, i, got.Name, got.DType, ti.Name, ti.DTypes)
		}
		tensors[got.Name], shapes[got.Name] = got, got.Shape
	}
	for _, ti := range inout {
		var o *difftest.OutputSpec
		for i := range c.Outputs {
			if c.Outputs[i].Name == ti.Name && c.Outputs[i].InOut {
				o = &c.Outputs[i]
			}
		}
		if o == nil {
			t.Fatalf("%s: contract in/out tensor %s is no in/out output of the case", c.ID, ti.Name)
		}
		cache := difftest.MustTensor(o.Name, o.DType, o.Shape...)
		tensors[o.Name], shapes[o.Name] = cache, o.Shape
	}
	raw, err := json.Marshal(c.Params)
	if err != nil {
		t.Fatal(err)
	}
	var params map[string]any
	if err := json.Unmarshal(raw, &params); err != nil {
		t.Fatal(err)
	}
	got, err := ci.OutputSpecs(params, shapes)
	if err != nil {
		t.Fatalf("%s: %v", c.ID, err)
	}
	if !reflect.DeepEqual(got, c.Outputs) {
		t.Errorf("%s: the contract gives outputs %+v, the kernel %+v", c.ID, got, c.Outputs)
	}
	for _, sz := range ci.Sizes {
		s, ok := shapes[sz.Tensor]
		for _, o := range c.Outputs {
			if o.Name == sz.Tensor {
				s, ok = o.Shape, true
			}
		}
		v, _ := params[sz.Param].(float64)
		n, has := sz.Of(s)
		if !ok || !has || float64(n) != v {
			t.Errorf("%s: params %s = %v, but %s has shape %v (the contract says axis %d)", c.ID, sz.Param, params[sz.Param], sz.Tensor, s, sz.Axis)
		}
	}
	keys := append(slices.Clone(ci.Required), ci.Optional...)
	sort.Strings(keys)
	if want := jsonKeys(c.Params); !slices.Equal(keys, want) {
		t.Errorf("%s: the contract lists params %v, the params struct has %v", c.ID, keys, want)
	}
	rebuild := func(p map[string]any) error {
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		c2, err := k.FromTensors(c.ID, b, tensors)
		if err != nil {
			return err
		}
		return k.Validate(c2)
	}
	if err := rebuild(params); err != nil {
		t.Fatalf("%s: the case's own params do not rebuild it: %v", c.ID, err)
	}
	minimal := map[string]any{}
	for _, key := range ci.Required {
		if v, ok := params[key]; ok {
			minimal[key] = v
		}
	}
	if err := rebuild(minimal); err != nil {
		t.Errorf("%s: a capture with only the required params %v is rejected: %v", c.ID, ci.Required, err)
	}
	for _, key := range ci.Required {
		p := map[string]any{}
		for k, v := range params {
			if k != key {
				p[k] = v
			}
		}
		// Where the value is the zero value, leaving the key out reads
		// the same value: no rule can reject that.
		if v := params[key]; v != nil && !reflect.ValueOf(v).IsZero() {
			if err := rebuild(p); err == nil {
				t.Errorf("%s: a capture without required param %q (%v) is accepted", c.ID, key, v)
			}
		}
	}
}
