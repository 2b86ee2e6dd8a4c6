package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// writeContracts prints every registered kernel's contract description
// (difftest.Contracts): as indented JSON on stdout with asJSON (the form
// python/src/kerneldiff/contracts.json holds), else one row per kernel
// on tw.
func writeContracts(tw *tabwriter.Writer, stdout io.Writer, asJSON bool) error {
	cs := difftest.Contracts()
	if asJSON {
		b, err := ContractsJSON(cs)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	fmt.Fprintln(tw, "KERNEL\tINPUTS\tOUTPUTS\tREQUIRED PARAMS\tOPTIONAL PARAMS")
	for _, c := range cs {
		var ins, outs []string
		for _, t := range c.Inputs {
			ds := make([]string, len(t.DTypes))
			for i, d := range t.DTypes {
				ds[i] = string(d)
			}
			ins = append(ins, t.Name+":"+strings.Join(ds, "|"))
		}
		for _, o := range c.Outputs {
			s := o.Name + ":" + string(o.DType)
			if o.When != "" {
				s += " (" + o.When + ")"
			}
			outs = append(outs, s)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, strings.Join(ins, " "), strings.Join(outs, " "),
			strings.Join(c.Required, ","), strings.Join(c.Optional, ","))
	}
	return nil
}

// ContractsJSON renders contract descriptions as `difftest list contracts
// --json` prints them: a JSON object {"generated_by", "contracts"},
// indented by two spaces, with a final newline.
func ContractsJSON(cs []difftest.ContractInfo) ([]byte, error) {
	b, err := json.MarshalIndent(struct {
		GeneratedBy string                  `json:"generated_by"`
		Contracts   []difftest.ContractInfo `json:"contracts"`
	}{"difftest list contracts --json", cs}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
