// Package pipeline runs a migration: it streams batches from extract,
// builds documents with transform and writes them to a load.Target, in
// three stages joined by bounded channels, so memory is bounded by
// (stages + queue depth) x batch size whatever the table size.
package pipeline

import "time"

// Options configure a migration run.
type Options struct {
	// BatchSize is the number of root rows read, built and written at a time.
	BatchSize int
	// Progress, when set, is called after each batch is written (from one
	// goroutine at a time).
	Progress func(Stats)
	// Reject, when set, is called for every row or document that failed,
	// whether building it or writing it failed.
	Reject func(Rejected)
}

// Rejected is one source row (or bucket page) that did not reach the target.
type Rejected struct {
	Collection string
	Source     string
	Err        error
}

// Stats counts one collection entry's progress.
type Stats struct {
	Collection string
	// Table is the entry's root table.
	Table string
	// Estimate is the catalog's row estimate for the root table (-1 unknown).
	Estimate int64
	// Rows is the number of root rows read; Written the number of
	// documents the target acknowledged; Failed the rows and documents
	// rejected.
	Rows    int64
	Written int64
	Failed  int64
	Queries int
	Elapsed time.Duration
	Done    bool
}
