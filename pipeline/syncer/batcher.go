package syncer

// The batcher: reads the change stream and gathers its changes into
// batches that end at a commit - when a batch holds MaxChanges rows or
// MaxDelay of changes, or, caught up, when the stream pauses for Linger -
// and tells the stream's progress past the last change (a keepalive).

import (
	"context"
	"errors"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/job"
)

// changeBatch is the changes received since the last batch applied.
type changeBatch struct {
	aff     *affected
	st      PassStats
	xids    []uint32
	commits []time.Time
	// end is the EndLSN of the batch's last commit: the position once it
	// is applied.
	end     extract.LSN
	rows    int
	started time.Time
}

func (s *syncer) newBatch() *changeBatch {
	return &changeBatch{aff: newAffected(s.fan, s.opt.MaxKeys), st: newPassStats(job.SyncLogical)}
}

func (b *changeBatch) empty() bool { return len(b.xids) == 0 }

// maxLags caps the transaction lags a batch reports.
const maxLags = 10_000

// batcher gathers one stream's changes into batches.
type batcher struct {
	s    *syncer
	cs   *extract.ChangeStream
	b    *changeBatch
	inTx bool
	xid  uint32
	// deferred is a Progress received while the batch held changes: the
	// batch is applied when the linger ends (more changes may be waiting
	// in the stream: the server sends a Progress after each burst of WAL
	// it decoded, and applying every burst alone could not keep up), and
	// the position then moves to it.
	deferred extract.LSN
}

func (s *syncer) newBatcher(cs *extract.ChangeStream) *batcher {
	return &batcher{s: s, cs: cs, b: s.newBatch()}
}

// step is what the stream does next: apply batch (when it holds changes),
// then move the position to progress (when it is past it).
type step struct {
	batch    *changeBatch
	progress extract.LSN
}

// take hands the batch over and starts a new one.
func (bt *batcher) take() *changeBatch {
	b := bt.b
	bt.b = bt.s.newBatch()
	return b
}

// next reads the stream until there is a step to take; a zero step when
// ctx ends.
func (bt *batcher) next(ctx context.Context) (step, error) {
	s := bt.s
	for {
		if ctx.Err() != nil {
			return step{}, nil
		}
		b := bt.b
		// A quiet stream still wakes the consumer every IdleSave: a
		// position received but not saved yet is saved then.
		wait := s.opt.IdleSave
		if !b.empty() && !bt.inTx {
			wait = time.Until(b.started.Add(s.opt.MaxDelay))
			if n := len(b.commits); n > 0 && time.Since(b.commits[n-1]) < s.opt.MaxDelay {
				// Caught up: apply as soon as the stream pauses. Behind,
				// a pause is the server decoding, not the end of the
				// writes: the batch takes MaxDelay of changes, so a
				// backlog is applied in few batches, not one per
				// transaction.
				wait = min(s.opt.Linger, wait)
			}
		}
		nctx, cancel := context.WithTimeout(ctx, max(wait, time.Millisecond))
		c, err := bt.cs.Next(nctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return step{}, nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				st := step{batch: bt.take(), progress: bt.deferred}
				bt.deferred = 0
				return st, nil
			}
			return step{}, err
		}
		switch c.Op {
		case extract.OpBegin:
			bt.inTx, bt.xid = true, c.Xid
			if b.empty() {
				b.started = time.Now()
			}
		case extract.OpRelation:
			var xids []uint32
			if bt.inTx {
				xids = []uint32{bt.xid}
			}
			if err := s.checkRelation(ctx, c.Rel, xids); err != nil {
				return step{}, err
			}
		case extract.OpInsert, extract.OpUpdate, extract.OpDelete:
			s.addRow(b, c)
		case extract.OpTruncate:
			for _, r := range c.Truncated {
				t := r.Table()
				if _, mapped := s.fan.rules[t]; mapped {
					b.aff.truncated(t)
					b.st.table(t).Truncates++
				}
			}
		case extract.OpCommit:
			bt.inTx = false
			if len(b.xids) == 0 {
				s.opt.Waiting(c.CommitTime)
			}
			b.xids = append(b.xids, bt.xid)
			if len(b.commits) < maxLags {
				b.commits = append(b.commits, c.CommitTime)
			} else {
				b.commits[len(b.commits)-1] = c.CommitTime
			}
			b.end = c.EndLSN
			if b.rows >= s.opt.MaxChanges || time.Since(b.started) >= s.opt.MaxDelay {
				return step{batch: bt.take()}, nil
			}
		case extract.OpProgress:
			// Everything committed before c.LSN was delivered.
			if !b.empty() {
				bt.deferred = max(bt.deferred, c.LSN)
				continue
			}
			return step{progress: c.LSN}, nil
		}
	}
}

// addRow adds one changed row to the batch.
func (s *syncer) addRow(b *changeBatch, c *extract.Change) {
	t := c.Rel.Table()
	if _, mapped := s.fan.rules[t]; !mapped {
		return
	}
	if why, stale := s.stale[t]; stale {
		// Described by a definition the plan does not match (see
		// checkRelation): what it reaches is rebuilt whole.
		b.rows++
		for _, r := range s.fan.rules[t] {
			b.aff.rebuild(r.Entry, why)
		}
		return
	}
	if s.fan.irrelevant(t, c) {
		// An update of columns no mapping reads: no document changes,
		// nothing is traced or rebuilt.
		b.st.table(t).Skipped++
		return
	}
	b.rows++
	tc := b.st.table(t)
	value := func(vals []extract.Value, fallback []extract.Value) func(string) (*string, bool) {
		return func(col string) (*string, bool) {
			i := c.Rel.Index(col)
			if i < 0 || i >= len(vals) {
				return nil, false
			}
			v := vals[i]
			if v.Kind == extract.ValueUnchanged && fallback != nil && i < len(fallback) {
				v = fallback[i]
			}
			switch v.Kind {
			case extract.ValueNull:
				return nil, true
			case extract.ValueText:
				text := v.Text
				return &text, true
			}
			return nil, false // stored out of line and unchanged, or absent
		}
	}
	var newValue, oldValue func(string) (*string, bool)
	switch c.Op {
	case extract.OpInsert:
		tc.Inserts++
		newValue = value(c.New, nil)
	case extract.OpUpdate:
		tc.Updates++
		newValue = value(c.New, c.Old)
		if c.OldKind != extract.OldNone {
			// Without old values the replica identity's columns, which
			// cover every column a rule reads (checked at start and at
			// each Relation), did not change.
			oldValue = value(c.Old, nil)
		}
	case extract.OpDelete:
		tc.Deletes++
		oldValue = value(c.Old, nil)
	}
	b.aff.row(t, newValue, oldValue)
}
