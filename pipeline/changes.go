package pipeline

// Logical sync's passes: the slot's committed changes after the job's
// position, gathered in batches that end at a commit, each applied in
// order: the documents its rows affect (fanout.go) are rebuilt from a
// snapshot that sees the batch and written, the position after it saved,
// then confirmed to the slot.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
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
	return &changeBatch{aff: newAffected(s.fan, s.opt.MaxKeys), st: newPassStats(load.SyncLogical)}
}

func (b *changeBatch) empty() bool { return len(b.xids) == 0 }

// maxLags caps the transaction lags a batch reports.
const maxLags = 10_000

// streamRetrying runs passes of the change stream (see stream), again
// after transient failures: a lost connection to the source or the
// target, a server restart. A new stream starts from the saved position,
// so the changes of the batch in progress are received again.
func (s *syncer) streamRetrying(ctx context.Context, once bool) error {
	return s.retrying(ctx, func() (bool, error) { return s.stream(ctx, once) })
}

// stream reads the job's slot from its position and applies batches
// until ctx ends or, once, until everything committed before the pass
// began is applied. It reports whether it saved a new position.
func (s *syncer) stream(ctx context.Context, once bool) (progressed bool, err error) {
	pos, err := extract.ParseLSN(s.cp.Sync.Position)
	if err != nil {
		return false, err
	}
	cs, err := s.lg.Stream(ctx, pos, extract.StreamOptions{})
	if err != nil {
		return false, err
	}
	defer cs.Close()
	var goal extract.LSN
	if once {
		if goal, err = s.lg.CommittedWAL(ctx); err != nil {
			return false, err
		}
	}
	b := s.newBatch()
	inTx := false
	var xid uint32
	var lastSave time.Time
	// done ends a --once pass: everything before goal is applied.
	done := func() bool { return once && pos >= goal }
	apply := func() error {
		if b.empty() {
			return nil
		}
		s.opt.Debug("applying a batch", "transactions", len(b.xids), "rows", b.rows, "end", b.end)
		if err := s.apply(ctx, b); err != nil {
			return s.schemaChanged(ctx, err)
		}
		s.opt.Debug("batch written", "end", b.end)
		pos = b.end
		s.cp.Sync.Position = pos.String()
		if err := s.passDone(ctx, &b.st, nil); err != nil {
			return err
		}
		s.opt.Debug("checkpoint saved", "position", pos)
		cs.Confirm(pos)
		s.opt.Debug("position confirmed", "position", pos)
		progressed, lastSave = true, time.Now()
		b = s.newBatch()
		return nil
	}
	// progress moves the position to lsn, a Progress's: everything
	// committed before it was delivered, and what was delivered is
	// applied. It saves and confirms the position when a --once pass is
	// done, or every 10 s while idle.
	progress := func(lsn extract.LSN) error {
		if lsn <= pos {
			return nil
		}
		pos = lsn
		s.cp.Sync.Position = pos.String()
		if done() || time.Since(lastSave) > 10*time.Second {
			s.cp.Sync.LagSeconds = 0
			if err := s.save(ctx); err != nil {
				return err
			}
			cs.Confirm(pos)
			progressed, lastSave = true, time.Now()
			s.opt.Idle(s.cp.Sync.Position)
		}
		return nil
	}
	// deferred is a Progress received while the batch held changes: the
	// batch is applied when the linger ends (more changes may be waiting
	// in the stream: the server sends a Progress after each burst of WAL
	// it decoded, and applying every burst alone could not keep up), and
	// the position then moves to it.
	var deferred extract.LSN
	if done() {
		return false, nil
	}
	for {
		if ctx.Err() != nil {
			// Interrupted: the batch in progress was not applied; the
			// next run receives it again.
			return progressed, nil
		}
		wait := time.Hour
		if !b.empty() && !inTx {
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
		c, err := cs.Next(nctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return progressed, nil
			}
			if errors.Is(err, context.DeadlineExceeded) {
				if err := apply(); err != nil {
					return progressed, err
				}
				if err := progress(deferred); err != nil {
					return progressed, err
				}
				if done() {
					return progressed, nil
				}
				continue
			}
			return progressed, err
		}
		switch c.Op {
		case extract.OpBegin:
			inTx, xid = true, c.Xid
			if b.empty() {
				b.started = time.Now()
			}
		case extract.OpRelation:
			if err := s.checkRelation(c.Rel); err != nil {
				return progressed, err
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
			inTx = false
			b.xids = append(b.xids, xid)
			if len(b.commits) < maxLags {
				b.commits = append(b.commits, c.CommitTime)
			} else {
				b.commits[len(b.commits)-1] = c.CommitTime
			}
			b.end = c.EndLSN
			if b.rows >= s.opt.MaxChanges || time.Since(b.started) >= s.opt.MaxDelay {
				if err := apply(); err != nil {
					return progressed, err
				}
				if done() {
					return progressed, nil
				}
			}
		case extract.OpProgress:
			// Everything committed before c.LSN was delivered.
			if !b.empty() {
				deferred = max(deferred, c.LSN)
				continue
			}
			if err := progress(c.LSN); err != nil {
				return progressed, err
			}
			if done() {
				return progressed, nil
			}
		}
	}
}

// checkRelation stops sync when a mapped table's definition changed in a
// way the plan cannot follow (a column it reads dropped or retyped), or
// its replica identity no longer gives the old values fan-out needs.
func (s *syncer) checkRelation(rel *extract.Relation) error {
	t := rel.Table()
	used, mapped := s.fan.used[t]
	if !mapped {
		return nil
	}
	var table = s.tableOf(t)
	if table != nil {
		if ch := rel.Changes(table, used); len(ch) > 0 {
			return &extract.SchemaChangeError{Table: t, Changes: ch}
		}
	}
	if rel.Identity == "full" {
		return nil
	}
	var keys []string
	for _, c := range rel.Columns {
		if c.Key {
			keys = append(keys, c.Name)
		}
	}
	for _, r := range s.fan.rules[t] {
		for _, c := range r.cols {
			if !slices.Contains(keys, c) {
				return &extract.ReplicaIdentityError{
					Tables: []extract.ReplicaIdentity{{Table: t, Mode: rel.Identity, Columns: keys, NotFull: []string{quoteTable(rel.Schema, rel.Name)}}},
					Why:    "the table's replica identity changed while syncing, and no longer gives the old values of the columns that place a row in its documents; sync stopped before applying changes it cannot trace",
				}
			}
		}
	}
	return nil
}

// schemaChanged explains a batch that failed to apply when a mapped table
// changed under sync. The stream describes a table again only before its
// next change, so documents that read a table changed by DDL alone (a
// column dropped, then only other tables written) fail to build before
// any Relation tells: the catalog is read again, and the first table whose
// used columns are gone or retyped is a *extract.SchemaChangeError. Any
// other failure is returned as it is.
func (s *syncer) schemaChanged(ctx context.Context, err error) error {
	if transient(err) || ctx.Err() != nil {
		return err
	}
	snap, serr := s.src.Snapshot(ctx)
	if serr != nil {
		return err
	}
	defer closeSnap(snap)
	tables := slices.Sorted(maps.Keys(s.fan.used))
	cat, cerr := extract.ReadCatalog(ctx, snap, tables)
	if cerr != nil {
		return err
	}
	for _, t := range tables {
		if then := s.tableOf(t); then != nil {
			if ch := extract.TableChanges(then, cat.Table(t), s.fan.used[t]); len(ch) > 0 {
				return &extract.SchemaChangeError{Table: t, Changes: ch}
			}
		}
	}
	return err
}

func quoteTable(schema, name string) string {
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	return q(schema) + "." + q(name)
}

// tableOf is the plan's catalog entry of table ("schema.table").
func (s *syncer) tableOf(table string) *mappings.Table {
	for _, t := range s.plan.Tables() {
		if t.QualifiedName() == table {
			return t
		}
	}
	return nil
}

// addRow adds one changed row to the batch.
func (s *syncer) addRow(b *changeBatch, c *extract.Change) {
	t := c.Rel.Table()
	if _, mapped := s.fan.rules[t]; !mapped {
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

// apply rebuilds what batch b affects, from a snapshot that sees all of
// its transactions, and writes it.
func (s *syncer) apply(ctx context.Context, b *changeBatch) error {
	st := &b.st
	st.Transactions = len(b.xids)
	if b.aff.empty() {
		return nil // transactions that changed nothing mapped
	}
	snap, err := s.snapshotSeeing(ctx, b.xids)
	if err != nil {
		return err
	}
	defer closeSnap(snap)
	keys, err := b.aff.keys(ctx, snap)
	if err != nil {
		return err
	}
	if len(b.aff.full) > 0 {
		var entries []int
		for e, why := range b.aff.full {
			entries = append(entries, e)
			st.Rebuilt = append(st.Rebuilt, fmt.Sprintf("%s: %s", s.plan.Collections[e].Name, why))
		}
		slices.Sort(entries)
		slices.Sort(st.Rebuilt)
		s.opt.Notice(fmt.Sprintf("rebuilding whole by a diff: %s", strings.Join(st.Rebuilt, "; ")))
		if err := s.diff(ctx, snap, entries, st); err != nil {
			return err
		}
	}
	for e := range s.plan.Collections {
		if ks := keys[e]; len(ks) > 0 {
			if err := s.rebuildKeys(ctx, snap, e, ks, st); err != nil {
				return err
			}
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
