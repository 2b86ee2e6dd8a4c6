package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest/report"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
)

// clearShardEnv unsets every variable --shard auto reads, for this test.
func clearShardEnv(t *testing.T) {
	for _, k := range []string{suite.EnvShard, suite.EnvShardCount, suite.EnvSlurmTaskID, suite.EnvSlurmTaskCount,
		suite.EnvSlurmTaskMin, suite.EnvSlurmTaskMax, suite.EnvSlurmTaskStep, suite.EnvJobCompletionIndex} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// The shards --shard auto picks under a Slurm array starting at 1 and a
// Kubernetes indexed Job of three completions each run their part, and
// merge joins them into the whole run.
func TestShardAuto(t *testing.T) {
	for _, engine := range []struct {
		name string
		n    int
		env  func(i int) map[string]string
		desc string
	}{
		{"slurm", 3, func(i int) map[string]string {
			return map[string]string{"SLURM_ARRAY_TASK_ID": itoa(i + 1), "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "3"}
		}, "Slurm array task"},
		{"kubernetes", 3, func(i int) map[string]string {
			return map[string]string{"JOB_COMPLETION_INDEX": itoa(i), "KD_SHARD_COUNT": "3"}
		}, "Kubernetes indexed Job"},
	} {
		t.Run(engine.name, func(t *testing.T) {
			dir := t.TempDir()
			var shards []string
			for i := 0; i < engine.n; i++ {
				clearShardEnv(t)
				for k, v := range engine.env(i) {
					t.Setenv(k, v)
				}
				out := filepath.Join(dir, "shard-"+itoa(i)+".jsonl")
				code, _, stderr := run(t, "run", "--impl", "reference", "--suite", small, "--shard", "auto", "--json", out)
				if code != 0 || !strings.Contains(stderr, "--shard auto: shard "+itoa(i)+"/3 from "+engine.desc) {
					t.Fatalf("shard %d: exit %d, %s", i, code, stderr)
				}
				shards = append(shards, out)
			}
			clearShardEnv(t)
			merged := filepath.Join(dir, "merged.jsonl")
			code, _, stderr := run(t, append([]string{"merge", "-o", merged}, shards...)...)
			if code != 0 {
				t.Fatalf("merge: exit %d, %s", code, stderr)
			}
			rep, err := report.ReadJSONLFile(merged)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Records) != 3 || rep.Header.MergedShards != 3 || rep.Summary == nil || rep.Summary.Passed != 3 {
				t.Errorf("merged: %d records, %d shards, summary %+v", len(rep.Records), rep.Header.MergedShards, rep.Summary)
			}
		})
	}
}

func TestShardAutoErrors(t *testing.T) {
	for _, tc := range []struct {
		env map[string]string
		msg string
	}{
		{map[string]string{}, "--shard auto: no shard in the environment"},
		{map[string]string{"JOB_COMPLETION_INDEX": "0"}, "KD_SHARD_COUNT is not"},
		{map[string]string{"KD_SHARD": "0/2", "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2"}, "gives shard 0/2 but Slurm"},
	} {
		clearShardEnv(t)
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		code, _, stderr := run(t, "run", "--impl", "reference", "--suite", small, "--shard", "auto")
		if code != 2 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.env, code, stderr, tc.msg)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
