#!/bin/bash
# Submits the kerneldiff nightly to Slurm: the shard array, then the merge
# once every task has ended (afterany: a task that found a failing case
# still has a report to merge). Run from the folder holding dist/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p reports
array=$(sbatch --parsable "$here/slurm-nightly.sbatch")
sbatch --dependency="afterany:${array%%;*}" "$here/slurm-merge.sbatch"
