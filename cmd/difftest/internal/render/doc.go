// Package render lays out difftest's reports for people: the run table
// (WriteTable, SummaryLine), the bench table (WriteBenchTable) and the
// self-contained HTML page of runs, failures, histograms and bench tables
// (WriteHTML).
package render
