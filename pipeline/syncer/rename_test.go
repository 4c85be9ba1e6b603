package syncer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/pipeline"
)

// TestRenamedAndBack: a column the mapping reads is renamed, its rows
// change, and it is renamed back before sync reads the changes: sync
// goes on (the changes in between rebuild the collection whole) and the
// target ends exact. A rename that stays still stops the job.
func TestRenamedAndBack(t *testing.T) {
	ctx := context.Background()
	mapping := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mapping, []byte(ackMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	db := testenv.PostgresDB(t)
	testenv.Exec(t, db, ackSchema)
	uri, _ := testenv.MongoDB(t)
	tg, err := load.Open(ctx, uri, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(ctx)
	name := fmt.Sprintf("renamed_%d", os.Getpid())
	t.Cleanup(func() {
		if src, err := extract.ParseSource(db); err == nil {
			if lg, err := src.Logical(name); err == nil {
				_ = lg.Drop(context.Background())
			}
		}
	})
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
