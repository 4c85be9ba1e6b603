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

// idleSave spaces the saves of a position that moves while nothing is
// applied (keepalives of a quiet source).
const idleSave = 10 * time.Second

// checkpointer moves one stream's position.
type checkpointer struct {
	s  *syncer
	cs *extract.ChangeStream
	// pos is the stream's position: every change committed before it was
	// applied (saved, or, idle, to be saved).
	pos      extract.LSN
	lastSave time.Time
}

// applied records batch b, written and acknowledged: its counts, and its
// end as the job's position, saved, then confirmed to the slot.
func (c *checkpointer) applied(ctx context.Context, b *changeBatch) error {
	s := c.s
	s.opt.Debug("batch written", "end", b.end)
	if err := s.passDone(ctx, &b.st, nil, job.WALAt{LSN: b.end}); err != nil {
		return err
	}
	c.pos = b.end
	s.opt.Debug("checkpoint saved", "position", b.end)
	c.cs.Confirm(b.end)
	s.opt.Debug("position confirmed", "position", b.end)
	c.lastSave = time.Now()
	return nil
}

// idle moves the position to lsn, before which everything committed was
// delivered and applied; it is saved and confirmed when force (a --once
// pass ends there) or idleSave after the last save. It reports whether it
// saved.
func (c *checkpointer) idle(ctx context.Context, lsn extract.LSN, force bool) (bool, error) {
	c.pos = lsn
	if !force && time.Since(c.lastSave) <= idleSave {
		return false, nil
	}
	s := c.s
	s.job.Update(func(r *job.Record) { r.Sync.LagSeconds = 0 })
	if err := s.job.Advance(ctx, job.WALAt{LSN: lsn}); err != nil {
		return false, err
	}
	c.cs.Confirm(lsn)
	c.lastSave = time.Now()
	s.opt.Idle(lsn.String())
	return true, nil
}
