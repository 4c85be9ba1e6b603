package syncer

// Checkpointing of logical sync: a position moves through the job
// (job.Job.Advance) only once the target acknowledged every write it
// covers, and is confirmed to the slot only once it is saved, so the slot
// keeps the WAL of everything that is not. A crash replays what was not
// saved, which rebuilds the same documents again from the current state:
// replaying is harmless.

import (
	"context"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/job"
)

// checkpointer moves one stream's position.
type checkpointer struct {
	s *syncer
	// confirm tells the slot a saved position (ChangeStream.Confirm).
	confirm func(extract.LSN)
	// pos is the stream's position: every change committed before it was
	// applied; saved is the position last saved (pos, or, idle, before
	// it: to be saved).
	pos, saved extract.LSN
	lastSave   time.Time
}

// applied records batch b, written and acknowledged: its counts, and its
// end as the job's position, saved, then confirmed to the slot.
func (c *checkpointer) applied(ctx context.Context, b *changeBatch) error {
	s := c.s
	sp := b.st.Spent
	s.opt.Debug(StepBatchWritten, "end", b.end, "snapshot", sp.Snapshot.Round(time.Millisecond), "trace", sp.Trace.Round(time.Millisecond),
		"build", sp.Build.Round(time.Millisecond), "write", sp.Write.Round(time.Millisecond))
	if err := s.passDone(ctx, &b.st, nil, job.WALAt{LSN: b.end}); err != nil {
		return err
	}
	c.pos, c.saved = b.end, b.end
	s.opt.Debug(StepCheckpointSaved, "position", b.end)
	c.confirm(b.end)
	s.opt.Debug(StepPositionConfirmed, "position", b.end)
	c.lastSave = time.Now()
	return nil
}

// idle moves the position to lsn (when past it), before which everything
// committed was delivered and applied, and saves and confirms a position
// not saved yet when force (a --once pass ends there) or Options.IdleSave
// after the last save: the stream calls it at every step, and at least
// every IdleSave while the source is quiet, so a caught-up job records
// it within twice IdleSave. It reports whether it saved.
func (c *checkpointer) idle(ctx context.Context, lsn extract.LSN, force bool) (bool, error) {
	c.pos = max(c.pos, lsn)
	s := c.s
	if c.pos <= c.saved || (!force && time.Since(c.lastSave) < s.opt.IdleSave) {
		return false, nil
	}
	s.job.Update(func(r *job.Record) { r.Sync.LagSeconds = 0 })
	if err := s.job.Advance(ctx, job.WALAt{LSN: c.pos}); err != nil {
		return false, err
	}
	c.saved = c.pos
	s.opt.Debug(StepIdleSaved, "position", c.pos)
	c.confirm(c.pos)
	s.opt.Debug(StepIdleConfirmed, "position", c.pos)
	c.lastSave = time.Now()
	s.opt.Idle(c.pos.String())
	return true, nil
}
