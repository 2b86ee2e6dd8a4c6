// Package triage goes from a failing case to a bug report: diagnosis (the
// catalog mutants and semantic variants a failing output behaves like:
// Diagnose; DiagnoseConfig.DiagnoseRecord is the run's hook), shrinking to
// a small reproducer (Shrink), and the selftest that checks the suite
// catches every catalog mutant (Selftest, WriteSelftestTable). Kernels
// take part by implementing VariantProvider, Matcher and Reducer.
package triage
