package syncer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
)

// TestCaughtUpIsSaved: a following job on a quiet source records that it
// caught up. The source's WAL moves on (writes to another database, which
// give the job no change), and the job's saved position and the slot's
// confirmed position reach it within a bounded time, even when the
// keepalive that told it came right after a save (the position then
// waited, unsaved, for a keepalive with a newer position that a quiet
// source never sends).
func TestCaughtUpIsSaved(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, ackSchema, "caught")
	mapping, tg, name := f.mapping, f.target, f.job
	other := testenv.PostgresDB(t)
	slot, err := extract.LogicalNames(name)
	if err != nil {
		t.Fatal(err)
	}
	snap, plan := snapshotPlan(t, f.db, mapping)
	src := snap.Source()
	const idleSave = 3 * time.Second
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := Sync(rctx, src, plan, tg, Options{Job: name, Mapping: mapping, Method: job.SyncLogical, Follow: true, IdleSave: idleSave})
		done <- err
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sync: %v", err)
		}
	}()
	record := func() *job.Record {
		r, err := job.Load(ctx, tg.Records(), name)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	waitFor := func(what string, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > time.Minute {
				t.Fatalf("%s: not within a minute", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitFor("the initial copy", func() bool { r := record(); return r != nil && r.Phase == job.PhaseDone })
	// A change, applied and saved; right after it, the WAL moves on
	// without any change of the job's database.
	before := record().Sync.Passes
	testenv.Exec(t, f.db, `UPDATE parent SET name = 'x' WHERE id = 1`)
	waitFor("the change applied", func() bool { return record().Sync.Passes > before })
	testenv.Exec(t, other, `CREATE TABLE filler AS SELECT g FROM generate_series(1, 10000) g`)
	wal, err := extract.ParseLSN(testenv.QueryString(t, other, "pg_current_wal_lsn()"))
	if err != nil {
		t.Fatal(err)
	}
	took := waitFor("the caught-up position saved", func() bool { return record().Sync.Position >= wal })
	// Within IdleSave of the keepalive that brought it (plus the time for
	// one to come), not when the source writes again.
	if bound := 2*idleSave + 2*time.Second; took > bound {
		t.Errorf("the caught-up position was saved %s after the WAL moved, over the bound of %s", took.Round(time.Millisecond), bound)
	}
	confirmed := func() bool {
		s := testenv.QueryString(t, f.db, fmt.Sprintf("(SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '%s')", slot))
		l, err := extract.ParseLSN(s)
		return err == nil && l >= wal
	}
	waitFor("the caught-up position confirmed to the slot", confirmed)
	t.Logf("caught up at %s: saved %s after the WAL moved", wal, took.Round(time.Millisecond))
}

// TestIdlePositionSavedOnTick: the checkpointer's rule alone. A position
// a keepalive brings right after a save is not saved at once (saves are
// spaced by IdleSave), but the next step of a quiet stream, which brings
// no newer position, saves and confirms it.
func TestIdlePositionSavedOnTick(t *testing.T) {
	ctx := context.Background()
	jb := job.Transient(nil, 1, 0, 1)
	jb.Update(func(r *job.Record) { r.Sync = &job.Sync{Method: job.SyncLogical, Slot: "s"} })
	var confirmed []extract.LSN
	var idle []string
	s := &syncer{job: jb, opt: Options{IdleSave: 50 * time.Millisecond, Idle: func(p string) { idle = append(idle, p) }, Debug: func(string, ...any) {}}}
	ck := &checkpointer{s: s, confirm: func(l extract.LSN) { confirmed = append(confirmed, l) }, pos: 10, saved: 10, lastSave: time.Now()}
	if saved, err := ck.idle(ctx, 20, false); err != nil || saved {
		t.Fatalf("a keepalive right after a save: saved %v, %v", saved, err)
	}
	time.Sleep(60 * time.Millisecond)
	if saved, err := ck.idle(ctx, 0, false); err != nil || !saved {
		t.Fatalf("the quiet stream's next step: saved %v, %v", saved, err)
	}
	if p := jb.Record().Sync.Position; p != 20 || len(confirmed) != 1 || confirmed[0] != 20 || len(idle) != 1 {
		t.Errorf("position %s, confirmed %v, idle %v; want 20 saved, confirmed and told once", p, confirmed, idle)
	}
	if saved, err := ck.idle(ctx, 0, false); err != nil || saved {
		t.Errorf("nothing new: saved %v, %v", saved, err)
	}
	if saved, err := ck.idle(ctx, 30, true); err != nil || !saved || jb.Record().Sync.Position != 30 {
		t.Errorf("a --once pass ending there saves at once: %v, %v, %s", saved, err, jb.Record().Sync.Position)
	}
}
