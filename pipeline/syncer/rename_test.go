package syncer

import (
	"context"
	"errors"
	"testing"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/pipeline"
)

// TestRenamedAndBack: a column the mapping reads is renamed, its rows
// change, and it is renamed back before sync reads the changes: sync
// goes on (the changes in between rebuild the collection whole) and the
// target ends exact. A rename that stays still stops the job.
func TestRenamedAndBack(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, ackSchema, "renamed")
	db, mapping, tg, name := f.db, f.mapping, f.target, f.job
	// The plan is resolved once, as a running job's is, against the
	// table as it was.
	src, plan := sourcePlan(t, db, mapping)
	once := func() error {
		_, err := Sync(ctx, src, plan, tg, Options{Job: name, Mapping: mapping, Method: job.SyncLogical})
		return err
	}
	if err := once(); err != nil { // the initial copy
		t.Fatal(err)
	}
	testenv.Exec(t, db, `ALTER TABLE child RENAME COLUMN v TO v_renamed;
		UPDATE child SET v_renamed = v_renamed + 1000 WHERE parent_id = 3;
		ALTER TABLE child RENAME COLUMN v_renamed TO v;
		UPDATE child SET v = v + 1 WHERE parent_id = 4;`)
	if err := once(); err != nil {
		t.Fatalf("sync after a rename and back: %v", err)
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Verify(ctx, snap, plan, tg, pipeline.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := res.Differences(); n != 0 {
		t.Errorf("after the rename and back the target differs in %d documents", n)
	}

	testenv.Exec(t, db, `ALTER TABLE child RENAME COLUMN v TO v_gone; UPDATE child SET v_gone = 0 WHERE parent_id = 5;`)
	var sce *extract.SchemaChangeError
	if err := once(); !errors.As(err, &sce) {
		t.Errorf("sync after a rename that stays = %v, want a SchemaChangeError", err)
	}
}
