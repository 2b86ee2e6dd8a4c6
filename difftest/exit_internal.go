package difftest

// ExitInternal is the exit code of a crash of difftest itself: a panic in
// the harness recovered at the top of the command line (README, exit
// codes). It is neither 2 (the user's input was bad) nor 125 (nothing
// could be tested here) nor a verdict: the harness has a bug, the stack is
// in a file named on stderr, and nothing the run would have said can be
// trusted. scripts/bisect-step skips the commit on it (125).
const ExitInternal = 3

// MaxBenchRuns bounds BenchConfig's Runs and Warmup (bench --runs,
// --warmup): far beyond any useful count, and far from the overflow of
// the budgets and counts derived from them (a --runs of 2^63−1 used to
// wrap to zero runs and report 0.000 µs).
const MaxBenchRuns = 1_000_000
