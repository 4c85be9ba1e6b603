// Package pipeline holds the engines of denorm's commands: each takes a
// snapshot of the source (extract), the resolved mapping and, where it
// has one, a target (load), runs behind an options struct, and returns
// results and typed errors; cmd/denorm only turns flags into options and
// results into text and exit codes. One file per engine:
//
//	produce.go   Produce and ProduceKeys: the one path that builds documents
//	             (read batches -> transform -> Built), shared by all below
//	migrate.go   Run: migrate's runner - workers, partitions, checkpoints,
//	             retries, reconnects
//	job.go       PrepareJob: a named job's start, resume, restart or refusal
//	plan.go      Plan: the dry run's report (transform/report)
//	verify.go    Verify: rebuilt documents against the target's, sorted on
//	             disk; dangling.go, its check of references
//	sync.go      (to come) the sync engine, on ProduceKeys
//
// Because every engine builds documents through Produce, what plan shows
// is what migrate writes and what verify checks. Reading, building and
// writing run concurrently, joined by channels of depth one whose pace is
// the consumer's (the target's acknowledgements for migrate), so memory
// is bounded by a few batches whatever the table size.
package pipeline
