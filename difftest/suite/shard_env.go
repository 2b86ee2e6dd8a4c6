// --shard auto (docs/nightly.md): the shard I/N of a run from the engine
// that started it: a Slurm job array, a Kubernetes indexed Job, or an
// explicit KD_SHARD (a CI matrix).

package suite

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/kerneldiff/kerneldiff/difftest"
)

// Environment variables ShardFromEnv reads.
const (
	// EnvShard is the explicit shard, "I/N" as --shard takes it (a GitHub
	// Actions matrix sets it: KD_SHARD: ${{ matrix.shard }}/4).
	EnvShard = "KD_SHARD"
	// EnvShardCount is the number of shards where the engine gives only
	// the index: a Kubernetes indexed Job's completions count, which
	// Kubernetes does not expose to the pod (pass it in the manifest).
	EnvShardCount = "KD_SHARD_COUNT"
	// Slurm job arrays (sbatch(1), "OUTPUT ENVIRONMENT VARIABLES").
	EnvSlurmTaskID    = "SLURM_ARRAY_TASK_ID"
	EnvSlurmTaskCount = "SLURM_ARRAY_TASK_COUNT"
	EnvSlurmTaskMin   = "SLURM_ARRAY_TASK_MIN"
	EnvSlurmTaskMax   = "SLURM_ARRAY_TASK_MAX"
	EnvSlurmTaskStep  = "SLURM_ARRAY_TASK_STEP"
	// Kubernetes indexed Jobs (completionMode: Indexed) set it in every pod.
	EnvJobCompletionIndex = "JOB_COMPLETION_INDEX"
)

// ErrShardEnv is wrapped by every error of ShardFromEnv.
var ErrShardEnv = errors.New("--shard auto")

// ShardFromEnv returns the shard of this run from the environment, as
// getenv reads it (os.Getenv), and a description of where it came from:
//
//   - KD_SHARD: "I/N" (ParseShard's rules);
//   - a Slurm array: I = (SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN) /
//     SLURM_ARRAY_TASK_STEP (MIN 0 and STEP 1 when unset), N =
//     SLURM_ARRAY_TASK_COUNT; an array that is not one evenly stepped
//     range (--array=1,4,9: MIN + (COUNT−1)·STEP ≠ SLURM_ARRAY_TASK_MAX)
//     has no I/N and is an error;
//   - a Kubernetes indexed Job: I = JOB_COMPLETION_INDEX, N =
//     KD_SHARD_COUNT (the Job's completions, passed in the manifest).
//
// When more than one is set, they must name the same I/N (KD_SHARD_COUNT
// next to a Slurm array must equal its count). Errors wrap ErrShardEnv
// and name the variables: none set, a value that is not a number, an
// index outside [0, N), or two sources that disagree.
func ShardFromEnv(getenv func(string) string) (difftest.Shard, string, error) {
	type source struct {
		sh   difftest.Shard
		desc string
	}
	var found []source
	fail := func(format string, args ...any) (difftest.Shard, string, error) {
		return difftest.Shard{}, "", fmt.Errorf("%w: %s", ErrShardEnv, fmt.Sprintf(format, args...))
	}
	num := func(name string) (int, bool, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return 0, false, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, true, fmt.Errorf("%s=%q is not a count or an index", name, v)
		}
		return n, true, nil
	}
	if v := getenv(EnvShard); v != "" {
		sh, err := difftest.ParseShard(v)
		if err != nil {
			return fail("%s=%q: want I/N with 0 ≤ I < N, e.g. 0/4", EnvShard, v)
		}
		found = append(found, source{sh, fmt.Sprintf("%s=%s", EnvShard, v)})
	}
	count, hasCount, err := num(EnvShardCount)
	if err != nil {
		return fail("%v", err)
	}
	id, hasID, err := num(EnvSlurmTaskID)
	if err != nil {
		return fail("%v", err)
	}
	if hasID {
		n, ok, err := num(EnvSlurmTaskCount)
		if err != nil {
			return fail("%v", err)
		}
		if !ok || n < 1 {
			return fail("%s is set but %s is not: not a Slurm job array task (sbatch --array)", EnvSlurmTaskID, EnvSlurmTaskCount)
		}
		lo, _, err := num(EnvSlurmTaskMin)
		if err != nil {
			return fail("%v", err)
		}
		step, hasStep, err := num(EnvSlurmTaskStep)
		if err != nil {
			return fail("%v", err)
		}
		if !hasStep || step < 1 {
			step = 1
		}
		if hi, ok, err := num(EnvSlurmTaskMax); err != nil {
			return fail("%v", err)
		} else if ok && lo+(n-1)*step != hi {
			return fail("the Slurm array %d-%d has %d tasks, not one range stepped by %d: it has no shard I/N (use --array=0-%d, or set %s)", lo, hi, n, step, n-1, EnvShard)
		}
		if id < lo || (id-lo)%step != 0 || (id-lo)/step >= n {
			return fail("%s=%d is not one of the %d tasks from %s=%d by %d", EnvSlurmTaskID, id, n, EnvSlurmTaskMin, lo, step)
		}
		sh := difftest.Shard{I: (id - lo) / step, N: n}
		desc := fmt.Sprintf("Slurm array task %s=%d of %s=%d", EnvSlurmTaskID, id, EnvSlurmTaskCount, n)
		if lo != 0 || step != 1 {
			desc += fmt.Sprintf(" (from %d by %d)", lo, step)
		}
		found = append(found, source{sh, desc})
		if hasCount && count != n {
			return fail("%s=%d disagrees with %s=%d", EnvShardCount, count, EnvSlurmTaskCount, n)
		}
	}
	idx, hasIdx, err := num(EnvJobCompletionIndex)
	if err != nil {
		return fail("%v", err)
	}
	switch {
	case hasIdx && !hasCount:
		return fail("%s=%d is set (a Kubernetes indexed Job) but %s is not: pass the Job's completions count in the manifest (env %s)", EnvJobCompletionIndex, idx, EnvShardCount, EnvShardCount)
	case hasIdx:
		if count < 1 || idx >= count {
			return fail("%s=%d is not below %s=%d", EnvJobCompletionIndex, idx, EnvShardCount, count)
		}
		found = append(found, source{difftest.Shard{I: idx, N: count}, fmt.Sprintf("Kubernetes indexed Job %s=%d of %s=%d", EnvJobCompletionIndex, idx, EnvShardCount, count)})
	case hasCount && !hasID:
		return fail("%s is set without an index (%s of a Kubernetes indexed Job, or a Slurm array)", EnvShardCount, EnvJobCompletionIndex)
	}
	if len(found) == 0 {
		return fail("no shard in the environment: set %s=I/N (a CI matrix), or run as a Slurm array task (%s, %s) or a Kubernetes indexed Job (%s with %s)",
			EnvShard, EnvSlurmTaskID, EnvSlurmTaskCount, EnvJobCompletionIndex, EnvShardCount)
	}
	for _, s := range found[1:] {
		if s.sh != found[0].sh {
			return fail("%s gives shard %s but %s gives %s", found[0].desc, found[0].sh, s.desc, s.sh)
		}
	}
	descs := make([]string, len(found))
	for i, s := range found {
		descs[i] = s.desc
	}
	return found[0].sh, strings.Join(descs, ", "), nil
}
