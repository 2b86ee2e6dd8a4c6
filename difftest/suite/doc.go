// Package suite reads the suites a run draws its cases from: TOML suite
// files and their matrix form (ParseSuite, LoadSuiteFile), the named
// suites of an fs.FS (LoadSuiteFS, SuiteNames), folders of capture files
// (LoadCaptureDir), the shard of a run from its job engine (ShardFromEnv),
// and the one resolution of a --suite value that every subcommand uses
// (Resolve). The suite it builds is the core's difftest.Suite, which the
// runner selects from and runs; errors are *difftest.SuiteError values
// (exit 2).
package suite
