// Package stats is the statistics of difftest bench: sample summaries
// (Summarize), distribution-free confidence intervals of the median
// (MedianCI), the Mann–Whitney U test and the Hodges–Lehmann interval of
// the ratio of two samples (CompareTimes), and the geometric mean. It
// imports the standard library only.
package stats
