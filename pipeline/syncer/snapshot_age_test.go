package syncer

import (
	"context"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/pipeline"
)

// TestSnapshotAgeBounded: a batch whose documents take longer to rebuild
// than SnapshotAge reads its later groups of keys from fresh snapshots
// (a snapshot is never held open past the bound plus one group), and the
// documents still equal a fresh migrate's, with changes made while the
// batch was being rebuilt applied by the next pass.
func TestSnapshotAgeBounded(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, ackSchema, "snapage")
	pass := func(age int) PassStats {
		t.Helper()
		src, plan := sourcePlan(t, f.db, f.mapping)
		var opt Options
		opt.Job, opt.Mapping, opt.Method = f.job, f.mapping, job.SyncLogical
		// Groups of snapshotKeys*BatchSize = 8 keys; an age of 1 ns makes
		// every group past the first take a fresh snapshot.
		opt.BatchSize, opt.SnapshotAge = 2, 1
		if age > 1 {
			opt.SnapshotAge = 1 << 40
		}
		res, err := Sync(ctx, src, plan, f.target, opt)
		if err != nil {
			t.Fatal(err)
		}
		return res.Total
	}
	pass(0) // the initial copy

	// One transaction touching every parent: one batch of 100 keys, 13
	// groups.
	testenv.Exec(t, f.db, `UPDATE child SET v = v * 10`)
	st := pass(1)
	if st.Snapshots < 13 {
		t.Errorf("a batch of 100 documents in groups of 8 with SnapshotAge 1ns read from %d snapshots, want at least 13", st.Snapshots)
	}
	if w := st.Collections["parents"]; w == nil || w.Written != 100 {
		t.Errorf("written %+v, want the 100 parents", st.Collections["parents"])
	}
	// Moves, deletes and inserts, with the bound far away: one snapshot.
	testenv.Exec(t, f.db, `UPDATE child SET parent_id = 1 + parent_id % 100 WHERE id % 7 = 0;
		DELETE FROM child WHERE id % 11 = 0; DELETE FROM parent WHERE id = 50 AND NOT EXISTS (SELECT FROM child WHERE parent_id = 50);
		INSERT INTO child SELECT 1000 + i, i, i FROM generate_series(1, 30) i`)
	if st := pass(2); st.Snapshots != 1 {
		t.Errorf("with the bound far away the batch read from %d snapshots, want 1", st.Snapshots)
	}
	testenv.Exec(t, f.db, `UPDATE child SET v = v + 1 WHERE id % 3 = 0`)
	pass(1)

	// The target equals a fresh migrate.
	uri, want := testenv.MongoDB(t)
	snap, plan := snapshotPlan(t, f.db, f.mapping)
	fresh, err := load.Open(ctx, uri, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	if _, err := pipeline.Migrate(ctx, pipeline.Migration{Snapshot: snap, Plan: plan, Target: fresh, Indexes: pipeline.IndexesNone}); err != nil {
		t.Fatal(err)
	}
	d, err := testenv.CompareTargets(ctx, want, f.tdb, testenv.CompareOptions{Ignore: []string{load.RecordCollection}})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Equal() {
		t.Errorf("the synced target differs from a fresh migrate:\n%s", d)
	}
}
