package bridge

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// TestCommandHelp checks that bridge's commands answer --help and -h like
// the built-in ones: exit 0, usage on stderr headed "Usage of difftest
// NAME:", and that the visible ones give `difftest help` a synopsis with
// their flags.
func TestCommandHelp(t *testing.T) {
	for _, name := range []string{"info", "gpu-selftest", WorkerCommand} {
		c, ok := difftest.LookupCommand(name)
		if !ok {
			t.Fatalf("command %s is not registered", name)
		}
		for _, h := range []string{"--help", "-h"} {
			var stdout, stderr bytes.Buffer
			code := c.Run(context.Background(), []string{h}, &stdout, &stderr)
			if code != 0 || stdout.Len() != 0 {
				t.Errorf("%s %s: exit %d, stdout %q; want 0 and usage on stderr", name, h, code, stdout.String())
			}
			if head := "Usage of difftest " + name + ":\n"; !strings.HasPrefix(stderr.String(), head) {
				t.Errorf("%s %s: usage starts %q, want %q", name, h, strings.SplitN(stderr.String(), "\n", 2)[0], head)
			}
		}
		var stderr bytes.Buffer
		if code := c.Run(context.Background(), []string{"--no-such-flag"}, &bytes.Buffer{}, &stderr); code != 2 {
			t.Errorf("%s --no-such-flag: exit %d, want 2", name, code)
		}
		if !c.Hidden && !strings.Contains(c.Usage, "--fatbin FILE") {
			t.Errorf("%s: Usage %q lacks its --fatbin flag", name, c.Usage)
		}
	}
}
