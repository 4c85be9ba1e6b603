package syncer

// The crash points of a sync pass: every step after which something is
// acknowledged or saved (the target took a write, the job's record was
// saved, the slot was told a position) and the steps between them. Sync
// tells Options.Debug of each, by these names, as it reaches it; -v logs
// them, and the crash tests (cmd/denorm crashpoints_test.go, through
// DENORM_TEST_HALT) kill sync at each of them and check that the next
// run makes the target exact. A step renamed here is renamed for the
// tests too, and a step that is no longer reached fails them.

import "github.com/denorm/denorm/job"

// The steps, in the order a pass reaches them.
const (
	// StepSlotCreated: logical, a new job (or one whose slot was lost):
	// the slot exists, its position is not saved in the job's record.
	StepSlotCreated = job.StepSlotCreated
	// StepCopySaved: the initial copy saved its progress (a stream's
	// position) after the target acknowledged what it covers.
	StepCopySaved = "copy checkpoint saved"
	// StepCopyEntryDone: the initial copy read and wrote every row of
	// one collection entry (its workers' last positions saved or not).
	StepCopyEntryDone = "copy entry done"
	// StepRebuildRecorded: a changed mapping's collections to rebuild
	// saved in the job's record, none rebuilt; StepMappingRecorded: they
	// were rebuilt and the new mapping saved (remap.go).
	StepRebuildRecorded = "rebuild recorded"
	StepMappingRecorded = "mapping recorded"
	// StepBatchReceived: logical, a batch of changes received, nothing
	// of it written.
	StepBatchReceived = "applying a batch"
	// StepDocumentsWritten and StepDocumentsDeleted: one target write (or
	// delete) of a batch or a diff pass acknowledged, the others not
	// made yet.
	StepDocumentsWritten = "documents written"
	StepDocumentsDeleted = "documents deleted"
	// StepDocumentsTombstoned: a tombstone write (onDelete) acknowledged.
	StepDocumentsTombstoned = "documents tombstoned"
	// StepCollectionRebuilt: every write of one collection of a batch (or
	// a diff pass) acknowledged, the next collection's not begun.
	StepCollectionRebuilt = "collection rebuilt"
	// StepBatchWritten: logical, every write of a batch acknowledged, its
	// end not saved as the job's position.
	StepBatchWritten = "batch written"
	// StepCheckpointSaved: logical, a batch's end saved as the job's
	// position, not yet confirmed to the slot.
	StepCheckpointSaved = "checkpoint saved"
	// StepPositionConfirmed: logical, the saved position confirmed to the
	// slot (the source may drop the WAL before it): between batches.
	StepPositionConfirmed = "position confirmed"
	// StepIdleSaved and StepIdleConfirmed: logical, a position past the
	// last batch (the stream caught up, or only changes nobody maps
	// since) saved, then confirmed to the slot.
	// (Not named "... position confirmed": tests wait for that, a batch.)
	StepIdleSaved     = "caught up, saved"
	StepIdleConfirmed = "caught up, confirmed"
	// StepPassWritten: a diff pass (or the initial copy) wrote everything,
	// its record not saved yet; StepPassSaved: saved.
	StepPassWritten = "pass written"
	StepPassSaved   = "pass saved"
)

// CrashPoint is one step of Steps: where it is and which methods reach
// it (in the initial copy, or in the passes after it).
type CrashPoint struct {
	Step string
	// Copy: reached by the initial copy; Pass: by the passes after it.
	Copy, Pass []string
	Where      string
	// Only, when set, is the condition the step needs (a mapping
	// change, a kind of mapping): the crash tests' rotation of random
	// writes does not reach it, so it is not aimed at there; the test
	// named reaches it.
	Only string
}

var (
	bothMethods = []string{job.SyncLogical, job.SyncDiff}
	logicalOnly = []string{job.SyncLogical}
)

// Steps lists every crash point of a sync pass.
var Steps = []CrashPoint{
	{StepSlotCreated, logicalOnly, nil, "the slot made, its position not saved", ""},
	{StepCopySaved, bothMethods, nil, "during the initial copy, a stream's progress saved", ""},
	{StepCopyEntryDone, logicalOnly, nil, "during the initial copy, a collection entry copied", ""},
	{StepBatchReceived, nil, logicalOnly, "a batch received, nothing written", ""},
	{StepDocumentsWritten, nil, bothMethods, "mid-batch or mid-pass: a write acknowledged", ""},
	{StepDocumentsDeleted, nil, bothMethods, "mid-batch or mid-pass: a delete acknowledged", ""},
	{StepDocumentsTombstoned, nil, bothMethods, "mid-batch or mid-pass: a tombstone written", "onDelete: tombstone (TestSyncOnDelete)"},
	{StepRebuildRecorded, nil, bothMethods, "a changed mapping: the collections to rebuild saved, none rebuilt", "a mapping change (TestSyncMappingChange)"},
	{StepMappingRecorded, nil, bothMethods, "a changed mapping: collections rebuilt, the new mapping saved", "a mapping change (TestSyncMappingChange)"},
	{StepCollectionRebuilt, nil, bothMethods, "between two collections of a batch or pass", ""},
	{StepBatchWritten, nil, logicalOnly, "a batch acknowledged, its position not saved", ""},
	{StepCheckpointSaved, nil, logicalOnly, "the position saved, not confirmed to the slot", ""},
	{StepPositionConfirmed, nil, logicalOnly, "the position confirmed to the slot: between batches", ""},
	{StepIdleSaved, nil, logicalOnly, "caught up: a position past the last batch saved, not confirmed", ""},
	{StepIdleConfirmed, nil, logicalOnly, "caught up: that position confirmed", ""},
	{StepPassWritten, bothMethods, []string{job.SyncDiff}, "a diff pass or the copy written, its record not saved", ""},
	{StepPassSaved, bothMethods, []string{job.SyncDiff}, "a diff pass or the copy written and its record saved", ""},
}
