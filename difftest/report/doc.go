// Package report writes and reads a run's reports: JSON Lines, streamed
// and flushed as each case ends (NewJSONLWriter; ReadJSONL reads a file
// cut short by a crash), JUnit XML (WriteJUnit), and the merge of the
// reports of every shard of one run, which refuses to lose or duplicate a
// case (Merge, MergeNamed). Rendering for people (the table, HTML) is
// cmd/difftest's.
package report
