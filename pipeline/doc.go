// Package pipeline holds the engines of denorm's commands: each takes a
// snapshot of the source (extract), the resolved mapping and, where it
// has one, a target (load), runs behind an options struct, and returns
// results and typed errors; cmd/denorm only turns flags into options and
// results into text and exit codes. Its files, by role:
//
//	produce.go      Produce and ProduceKeys: the one path that builds
//	                documents (read batches -> transform -> Built), shared
//	                by all below
//
//	migration.go    Migrate: migrate's sequence - the job prepared, --drop
//	                (DropCollections), shard keys, indexes before, the
//	                replication slot for --sync logical, Run, the lease
//	                released
//	migrate.go      Run: migrate's runner - workers, partitions,
//	                positions advanced through the job (package job) once
//	                the target acknowledged them, retries, reconnects
//	indexphase.go   the job's last phase: the mapping's indexes, created
//	                and recorded in the job's record
//	index.go        shard keys and indexes created and checked; Subset and
//	                Limit, the plan variants a run may ask for
//	targetcheck.go  TargetProblems: what the target cannot store, refused
//	                before anything is written
//
//	restart.go      PrepareJob: job.Prepare with a restart that deletes
//	                what the job wrote; the collections a run writes
//	own.go          which documents of a server are the job's, before any
//	                is deleted (fresh runs on FerretDB, --restart)
//
//	plan.go         Plan: the dry run's report (transform/report)
//	validate.go     Validate: a mapping against the live catalog, its
//	                queries, a target and logical sync
//	advise.go       Advise: the catalog and statistics read, a mapping
//	                drafted (mappings/advise) with its rows covered
//
//	verify.go       Verify: rebuilt documents against the target's
//	repair.go       verify --repair: what differs written as the source
//	                gives it, what it does not give deleted
//	recheck.go      verify against a target a running sync job writes:
//	                differences compared again once the job caught up,
//	                repairs written while the job pauses
//	dangling.go     verify's check of references
//	oracle.go       verify --oracle sql: the expected side built by the
//	                independent oracle (package oracle)
//
// Beneath it, rooms of their own: pipeline/compare (the comparison verify
// and sync's diff pass share: both sides hashed, sorted on disk, merged)
// and pipeline/syncer (sync: the logical stream, the diff pass and the
// fan-out). What a job is - its record, positions, lease, replication
// slot, status - is package job's, below pipeline.
//
// Because every engine builds documents through Produce, what plan shows
// is what migrate writes, what sync rewrites and what verify checks.
// Reading, building and writing run concurrently, joined by channels of
// depth one whose pace is the consumer's (the target's acknowledgements
// for migrate), so memory is bounded by a few batches whatever the table
// size.
package pipeline
