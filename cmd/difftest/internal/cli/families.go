// `difftest list families`: each kernel's input families and the suite
// params they accept, from the kernels' difftest.FamilyDescriber.

package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// writeFamilies prints, per registered kernel, the params every family
// accepts (once, as most families describe them), then each family with
// its one-line description and the params only it accepts or describes
// differently. Required params carry
// "(required)". A kernel without DescribeFamilies lists its family names.
func writeFamilies(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for i, k := range difftest.Kernels() {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s\n", k.Name())
		d, ok := k.(difftest.FamilyDescriber)
		if !ok {
			for _, f := range k.Families() {
				fmt.Fprintf(tw, "  %s\t(no description)\n", f)
			}
			continue
		}
		infos := d.DescribeFamilies()
		common := commonParams(infos)
		if len(common) > 0 {
			fmt.Fprintln(tw, "  params of every family (unless the family lists its own):")
			for _, p := range common {
				writeParam(tw, p)
			}
		}
		for _, f := range infos {
			fmt.Fprintf(tw, "  %s\t%s\n", f.Name, f.Doc)
			for _, p := range f.Params {
				if !containsParam(common, p) {
					writeParam(tw, p)
				}
			}
		}
	}
	return tw.Flush()
}

func writeParam(w io.Writer, p difftest.ParamInfo) {
	name := p.Name
	if p.Required {
		name += " (required)"
	}
	fmt.Fprintf(w, "    %s\t%s\n", name, p.Doc)
}

// commonParams returns, for each param name every family accepts (in the
// first family's order), the description most families give it (the
// first one seen on a tie); a family that describes it otherwise lists its
// own line.
func commonParams(infos []difftest.FamilyInfo) []difftest.ParamInfo {
	if len(infos) == 0 {
		return nil
	}
	var out []difftest.ParamInfo
	for _, p := range infos[0].Params {
		var variants []difftest.ParamInfo
		count := map[difftest.ParamInfo]int{}
		for _, f := range infos {
			for _, q := range f.Params {
				if q.Name == p.Name {
					if count[q] == 0 {
						variants = append(variants, q)
					}
					count[q]++
				}
			}
		}
		total := 0
		best := variants[0]
		for _, v := range variants {
			total += count[v]
			if count[v] > count[best] {
				best = v
			}
		}
		if total == len(infos) {
			out = append(out, best)
		}
	}
	return out
}

func containsParam(ps []difftest.ParamInfo, p difftest.ParamInfo) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}
