package syncer

// Logical sync's passes: the slot's committed changes after the job's
// position, gathered in batches that end at a commit (batcher.go), each
// applied in order (apply.go: the documents its rows affect, fanout.go,
// rebuilt from a snapshot that sees the batch and written), then its end
// made the job's position and confirmed to the slot (checkpoint.go).

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

// streamRetrying runs passes of the change stream (see stream), again
// after transient failures: a lost connection to the source or the
// target, a server restart. A new stream starts from the saved position,
// so the changes of the batch in progress are received again.
func (s *syncer) streamRetrying(ctx context.Context, once bool) error {
	return s.retrying(ctx, func() (bool, error) {
		progressed, err := s.stream(ctx, once)
		if slotLost(err) && !s.slotRecovered {
			// Once per run: a slot lost again right away is an error.
			s.slotRecovered = true
			if err := s.recoverSlot(ctx, err); err != nil {
				return progressed, err
			}
			return s.stream(ctx, once)
		}
		return progressed, err
	})
}

// slotLost reports whether err says the job's replication slot (or its
// publication) is gone or was invalidated by the server.
func slotLost(err error) bool {
	return errors.As(err, new(*extract.SlotMissingError)) || errors.As(err, new(*extract.SlotInvalidError))
}

// recoverSlot makes the job whole again after its slot was lost (dropped
// by hand, or invalidated by PostgreSQL past max_slot_wal_keep_size): the
// changes since the job's position cannot be read any more, so a new slot
// is made, and the target is brought to the snapshot it exported by a
// diff (only the documents that differ are written); the stream then goes
// on from the new slot.
func (s *syncer) recoverSlot(ctx context.Context, lost error) error {
	s.opt.Notice(fmt.Sprintf("%v -- instead: catching up with a diff against the source, then streaming from a new replication slot", shortSlotError(lost)))
	return s.copyFromNewSlot(ctx, true)
}

// shortSlotError is the first part of a lost slot's error, without the
// advice to start the job over, which recoverSlot does.
func shortSlotError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "; the changes since"); i > 0 {
		return msg[:i]
	}
	return msg
}

// stream reads the job's slot from its position and applies batches
// until ctx ends or, once, until everything committed before the pass
// began is applied. It reports whether it saved a new position.
func (s *syncer) stream(ctx context.Context, once bool) (progressed bool, err error) {
	start := s.job.Record().Sync.Position
	ck := &checkpointer{s: s, pos: start, saved: start}
	cs, err := s.lg.Stream(ctx, ck.pos, extract.StreamOptions{})
	if err != nil {
		return false, err
	}
	defer cs.Close()
	ck.confirm = cs.Confirm
	var goal extract.LSN
	if once {
		if goal, err = s.lg.CommittedWAL(ctx); err != nil {
			return false, err
		}
	}
	// done ends a --once pass: everything before goal is applied.
	done := func() bool { return once && ck.pos >= goal }
	if done() {
		return false, nil
	}
	bt := s.newBatcher(cs)
	var slotRead time.Time
	for {
		if s.opt.Slot != nil && time.Since(slotRead) >= s.opt.SlotEvery {
			// What the slot keeps on the source (best effort: a failure
			// to read it is the stream's to find).
			slotRead = time.Now()
			if st, err := s.lg.Status(ctx); err == nil {
				s.opt.Slot(st)
			}
		}
		st, err := bt.next(ctx)
		if err != nil {
			return progressed, err
		}
		if ctx.Err() != nil {
			// Interrupted: the batch in progress was not applied; the
			// next run receives it again.
			return progressed, nil
		}
		if b := st.batch; b != nil && !b.empty() {
			// A process that asked the job to pause (verify --repair)
			// writes meanwhile: the batch waits (job/pause.go). The look
			// reads the target: a failure there is a target failure,
			// retried as the batch's writes are, the stream kept open.
			if err := load.Retry(ctx, s.retryPolicy(), func() error { return s.job.HonourPause(ctx, s.opt.Info) }); err != nil {
				return progressed, err
			}
			s.opt.Debug(StepBatchReceived, "transactions", len(b.xids), "rows", b.rows, "end", b.end)
			if err := s.apply(ctx, b); err != nil {
				return progressed, s.schemaChanged(ctx, err)
			}
			if err := ck.applied(ctx, b); err != nil {
				return progressed, err
			}
			progressed = true
		}
		saved, err := ck.idle(ctx, st.progress, once && max(ck.pos, st.progress) >= goal)
		if err != nil {
			return progressed, err
		}
		progressed = progressed || saved
		if done() {
			return progressed, nil
		}
	}
}

// checkRelation stops sync when a mapped table's definition changed in a
// way the plan cannot follow (a column it reads dropped or retyped), or
// its replica identity no longer gives the old values fan-out needs. A
// definition that differs from the plan while the table today matches it
// again (a column renamed and renamed back) does not stop sync: the
// table's rows the stream describes by it are stale (their columns go by
// other names), and every collection entry that reads the table is
// rebuilt whole from the current state instead (addRow) until the stream
// describes the table as the plan has it again. xids is the transaction
// the stream describes the table in (none outside one): the table is read
// as it is now from a snapshot that sees it, since the stream may deliver
// a transaction before new snapshots see its commit (extract.Snapshot.Sees),
// and a snapshot that does not see an ALTER TABLE would show the table as
// the plan has it.
func (s *syncer) checkRelation(ctx context.Context, rel *extract.Relation, xids []uint32) error {
	t := rel.Table()
	used, mapped := s.fan.used[t]
	if !mapped {
		return nil
	}
	delete(s.stale, t)
	var table = s.tableOf(t)
	if table != nil {
		if ch := rel.Changes(table, used); len(ch) > 0 {
			now, err := s.currentChanges(ctx, t, xids)
			switch {
			case err != nil:
				return err
			case len(now) > 0:
				return &extract.SchemaChangeError{Table: t, Changes: ch}
			}
			s.stale[t] = fmt.Sprintf("a change of %s described with columns since renamed back (%s)", t, ch[0])
			s.opt.Notice(fmt.Sprintf("%s changed (%s) and is back as the mapping reads it: its changes in between rebuild the collections that read it whole", t, ch[0]))
			return nil
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
		for _, c := range r.Cols {
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

// currentChanges reads table's definition as it is now, in a snapshot
// that sees the transactions xids, and returns how the columns the plan
// reads of it differ from the plan's.
func (s *syncer) currentChanges(ctx context.Context, table string, xids []uint32) ([]extract.ColumnChange, error) {
	snap, err := s.snapshotSeeing(ctx, xids)
	if err != nil {
		return nil, err
	}
	defer closeSnap(snap)
	cat, err := extract.ReadCatalog(ctx, snap, []string{table})
	if err != nil {
		return nil, err
	}
	return extract.TableChanges(s.tableOf(table), cat.Table(table), s.fan.used[table]), nil
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
