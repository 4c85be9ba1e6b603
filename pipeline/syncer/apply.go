package syncer

// The applier: what a batch of changes affects is rebuilt from a snapshot
// that sees all of its transactions, and written; the documents of the
// entries it affects too widely are rebuilt whole by a diff.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// apply rebuilds what batch b affects, from a snapshot that sees all of
// its transactions, and writes it.
func (s *syncer) apply(ctx context.Context, b *changeBatch) error {
	st := &b.st
	st.Transactions = len(b.xids)
	if b.aff.empty() {
		return nil // transactions that changed nothing mapped
	}
	t0 := time.Now()
	snap, err := s.snapshotSeeing(ctx, b.xids)
	if err != nil {
		return err
	}
	t1 := time.Now()
	held := &heldSnap{s: s, snap: snap, opened: t1, st: st}
	defer held.close()
	st.Snapshots++
	st.Spent.Snapshot += t1.Sub(t0)
	keys, err := b.aff.keys(ctx, snap)
	if err != nil {
		return err
	}
	t2 := time.Now()
	st.Spent.Trace += t2.Sub(t1)
	defer func() { st.Spent.Build += time.Since(t2) - st.Spent.Write }()
	if len(b.aff.full) > 0 {
		var entries []int
		for e, why := range b.aff.full {
			entries = append(entries, e)
			st.Rebuilt = append(st.Rebuilt, fmt.Sprintf("%s: %s", s.plan.Collections[e].Name, why))
		}
		slices.Sort(entries)
		slices.Sort(st.Rebuilt)
		s.opt.Info(fmt.Sprintf("rebuilding whole by a diff: %s", strings.Join(st.Rebuilt, "; ")))
		if err := s.diff(ctx, snap, entries, st); err != nil {
			return err
		}
	}
	st.countFanout(b.aff, s.plan)
	for e := range s.plan.Collections {
		if ks := keys[e]; len(ks) > 0 {
			if err := s.rebuildKeys(ctx, held, e, ks, st); err != nil {
				return err
			}
			s.opt.Debug(StepCollectionRebuilt, "collection", s.plan.Collections[e].Name)
		}
	}
	acked := time.Now()
	for _, t := range b.commits {
		st.TxLags = append(st.TxLags, acked.Sub(t))
	}
	if n := len(b.commits); n > 0 {
		st.Lag = acked.Sub(b.commits[n-1])
	}
	return nil
}

// heldSnap is the snapshot a batch is rebuilt from, replaced by a fresh
// one once older than Options.SnapshotAge (fresh): any later snapshot
// sees the batch's transactions too, since a committed transaction stays
// visible, and rebuilding a document from a later state is what a later
// batch would do anyway (the changes in between are applied after).
type heldSnap struct {
	s      *syncer
	snap   *extract.Snapshot
	opened time.Time
	st     *PassStats
}

// fresh is the snapshot to read the next group of keys from.
func (h *heldSnap) fresh(ctx context.Context) (*extract.Snapshot, error) {
	if time.Since(h.opened) < h.s.opt.SnapshotAge {
		return h.snap, nil
	}
	closeSnap(h.snap)
	h.snap = nil
	t0 := time.Now()
	snap, err := h.s.src.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	h.snap, h.opened = snap, time.Now()
	h.st.Snapshots++
	h.st.Spent.Snapshot += h.opened.Sub(t0)
	return snap, nil
}

func (h *heldSnap) close() {
	if h.snap != nil {
		closeSnap(h.snap)
	}
}

// snapshotSeeing opens a snapshot that sees every transaction of xids
// (see extract.Snapshot.Sees), waiting for their commits to become
// visible.
func (s *syncer) snapshotSeeing(ctx context.Context, xids []uint32) (*extract.Snapshot, error) {
	deadline := time.Now().Add(time.Minute)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		snap, err := s.src.Snapshot(ctx)
		if err != nil {
			return nil, err
		}
		ok, err := snap.Sees(ctx, xids)
		if err == nil && ok {
			return snap, nil
		}
		closeSnap(snap)
		if err != nil {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the source still shows none of some transactions the change stream delivered as committed, after a minute")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// write writes docs of coll, WriteBatch at a time, retrying transient
// failures; a write in flight completes when ctx ends.
func (s *syncer) write(ctx context.Context, coll string, docs []transform.Document, st *PassStats) error {
	for chunk := range slices.Chunk(docs, s.opt.WriteBatch) {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.Retry.For+time.Minute)
		t0 := time.Now()
		rejects, err := s.writer.Write(wctx, coll, chunk)
		st.Spent.Write += time.Since(t0)
		cancel()
		if err != nil {
			return err
		}
		s.rejects(rejects, st)
		st.coll(coll).Written += int64(len(chunk) - len(rejects))
		s.opt.Debug(StepDocumentsWritten, "collection", coll, "documents", len(chunk))
	}
	return nil
}

// delete deletes what sel picks in coll, retrying transient failures.
func (s *syncer) delete(ctx context.Context, coll string, sel load.Selection, st *PassStats) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.Retry.For+time.Minute)
	defer cancel()
	var n int64
	t0 := time.Now()
	defer func() { st.Spent.Write += time.Since(t0) }()
	err := load.Retry(wctx, s.retryPolicy(), func() error {
		var err error
		n, err = s.target.Delete(wctx, coll, sel)
		return err
	})
	if err != nil {
		return err
	}
	st.coll(coll).Deleted += max(n, 0)
	s.opt.Debug(StepDocumentsDeleted, "collection", coll, "documents", n)
	return nil
}

// gone deals with documents of coll whose root row is gone, as the
// collection's onDelete says (mappings/ondelete.go): deletes what sel
// picks, sets the tombstone field on those that lack it, or leaves them.
func (s *syncer) gone(ctx context.Context, coll string, sel load.Selection, st *PassStats) error {
	mode, field := s.plan.OnDeleteOf(coll)
	switch mode {
	case mappings.OnDeleteIgnore:
		return nil
	case mappings.OnDeleteTombstone:
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.Retry.For+time.Minute)
		defer cancel()
		at := time.Now()
		var n int64
		err := load.Retry(wctx, s.retryPolicy(), func() error {
			var err error
			n, err = s.target.Tombstone(wctx, coll, sel, field, at)
			return err
		})
		if err != nil {
			return err
		}
		st.coll(coll).Tombstoned += n
		s.opt.Debug(StepDocumentsTombstoned, "collection", coll, "documents", n)
		return nil
	}
	return s.delete(ctx, coll, sel, st)
}

func (s *syncer) rejects(rs []transform.Reject, st *PassStats) {
	for _, r := range rs {
		st.Rejected++
		if s.opt.Reject != nil {
			s.opt.Reject(r)
		}
	}
}
