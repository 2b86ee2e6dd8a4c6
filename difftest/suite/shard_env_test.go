package suite

import (
	"errors"
	"strings"
	"testing"

	"github.com/kerneldiff/kerneldiff/difftest"
)

func TestShardFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want difftest.Shard
		desc string // substring of the description
		err  string // substring of the error; "" for none
	}{
		// Slurm: sbatch --array sets ID, COUNT, MIN, MAX, STEP.
		{"Slurm --array=0-3, task 2", map[string]string{"SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}, difftest.Shard{I: 2, N: 4}, "Slurm array task SLURM_ARRAY_TASK_ID=2 of SLURM_ARRAY_TASK_COUNT=4", ""},
		{"Slurm --array=1-4 does not start at 0: task 1 is shard 0", map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4"}, difftest.Shard{I: 0, N: 4}, "(from 1 by 1)", ""},
		{"Slurm --array=10-16:3, task 16 is the third", map[string]string{"SLURM_ARRAY_TASK_ID": "16", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "10", "SLURM_ARRAY_TASK_MAX": "16", "SLURM_ARRAY_TASK_STEP": "3"}, difftest.Shard{I: 2, N: 3}, "(from 10 by 3)", ""},
		{"Slurm without MIN (older sbatch): from 0", map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, difftest.Shard{I: 3, N: 4}, "", ""},
		{"Slurm with a throttle %2 still one range", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "8", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_STEP": "1"}, difftest.Shard{I: 0, N: 8}, "", ""},
		{"Slurm --array=1,4,9 has no I/N", map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "9"}, difftest.Shard{}, "", "not one range stepped by 1"},
		{"Slurm ID without COUNT", map[string]string{"SLURM_ARRAY_TASK_ID": "1"}, difftest.Shard{}, "", "SLURM_ARRAY_TASK_COUNT is not"},
		{"Slurm ID below MIN", map[string]string{"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "1"}, difftest.Shard{}, "", "is not one of the 2 tasks"},
		{"Slurm ID not a number", map[string]string{"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "2"}, difftest.Shard{}, "", `SLURM_ARRAY_TASK_ID="x" is not`},
		// Kubernetes: JOB_COMPLETION_INDEX, the count passed in.
		{"Kubernetes index 3 of 4", map[string]string{"JOB_COMPLETION_INDEX": "3", "KD_SHARD_COUNT": "4"}, difftest.Shard{I: 3, N: 4}, "Kubernetes indexed Job JOB_COMPLETION_INDEX=3 of KD_SHARD_COUNT=4", ""},
		{"Kubernetes without the count", map[string]string{"JOB_COMPLETION_INDEX": "0"}, difftest.Shard{}, "", "KD_SHARD_COUNT is not"},
		{"Kubernetes index past the count", map[string]string{"JOB_COMPLETION_INDEX": "4", "KD_SHARD_COUNT": "4"}, difftest.Shard{}, "", "is not below KD_SHARD_COUNT=4"},
		{"a count without an index", map[string]string{"KD_SHARD_COUNT": "4"}, difftest.Shard{}, "", "without an index"},
		// Explicit.
		{"KD_SHARD of a CI matrix", map[string]string{"KD_SHARD": "1/3"}, difftest.Shard{I: 1, N: 3}, "KD_SHARD=1/3", ""},
		{"KD_SHARD malformed", map[string]string{"KD_SHARD": "3/3"}, difftest.Shard{}, "", `KD_SHARD="3/3"`},
		// Two sources.
		{"KD_SHARD agrees with Slurm", map[string]string{"KD_SHARD": "2/4", "SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4"}, difftest.Shard{I: 2, N: 4}, "KD_SHARD=2/4, Slurm", ""},
		{"KD_SHARD disagrees with Slurm", map[string]string{"KD_SHARD": "1/4", "SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4"}, difftest.Shard{}, "", "KD_SHARD=1/4 gives shard 1/4 but Slurm array task SLURM_ARRAY_TASK_ID=2 of SLURM_ARRAY_TASK_COUNT=4 gives 2/4"},
		{"KD_SHARD_COUNT disagrees with the Slurm count", map[string]string{"KD_SHARD_COUNT": "8", "SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4"}, difftest.Shard{}, "", "KD_SHARD_COUNT=8 disagrees with SLURM_ARRAY_TASK_COUNT=4"},
		{"Slurm and Kubernetes disagree", map[string]string{"JOB_COMPLETION_INDEX": "1", "KD_SHARD_COUNT": "4", "SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_COUNT": "4"}, difftest.Shard{}, "", "gives 1/4"},
		{"nothing set", map[string]string{}, difftest.Shard{}, "", "no shard in the environment: set KD_SHARD=I/N"},
	} {
		sh, desc, err := ShardFromEnv(func(k string) string { return tc.env[k] })
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrShardEnv) {
				t.Errorf("%s: err %v, want one containing %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case sh != tc.want || !strings.Contains(desc, tc.desc):
			t.Errorf("%s: %v (%q), want %v (%q)", tc.name, sh, desc, tc.want, tc.desc)
		}
	}
}
