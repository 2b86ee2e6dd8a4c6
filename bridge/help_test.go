package bridge

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestCommandHelp checks that bridge's commands answer --help and -h like
// the built-in ones: exit 0, usage on stderr headed "Usage of difftest
// NAME:", and exit 2 on an unknown flag. (cmd/difftest registers them;
// its tests check their synopses.)
func TestCommandHelp(t *testing.T) {
	for name, run := range map[string]func(context.Context, []string, io.Writer, io.Writer) int{
		"info": Info, "gpu-selftest": GPUSelftest, WorkerCommand: Worker,
	} {
		for _, h := range []string{"--help", "-h"} {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{h}, &stdout, &stderr)
			if code != 0 || stdout.Len() != 0 {
				t.Errorf("%s %s: exit %d, stdout %q; want 0 and usage on stderr", name, h, code, stdout.String())
			}
			if head := "Usage of difftest " + name + ":\n"; !strings.HasPrefix(stderr.String(), head) {
				t.Errorf("%s %s: usage starts %q, want %q", name, h, strings.SplitN(stderr.String(), "\n", 2)[0], head)
			}
		}
		var stderr bytes.Buffer
		if code := run(context.Background(), []string{"--no-such-flag"}, &bytes.Buffer{}, &stderr); code != 2 {
			t.Errorf("%s --no-such-flag: exit %d, want 2", name, code)
		}
	}
}
