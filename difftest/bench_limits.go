package difftest

// MaxBenchRuns bounds BenchConfig's Runs and Warmup (bench --runs,
// --warmup): far beyond any useful count, and far from the overflow of
// the budgets and counts derived from them (a --runs of 2^63−1 used to
// wrap to zero runs and report 0.000 µs).
const MaxBenchRuns = 1_000_000
