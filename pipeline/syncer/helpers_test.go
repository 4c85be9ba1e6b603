package syncer

import (
	"context"
	"testing"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
)

// snapshotPlan opens a snapshot of db (closed at the end of the test) and
// resolves the mapping file against it.
func snapshotPlan(t *testing.T, db, file string) (*extract.Snapshot, *mappings.Plan) {
	t.Helper()
	ctx := context.Background()
	src, err := extract.ParseSource(db)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close(ctx) })
	f, err := mappings.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := extract.ReadCatalog(ctx, snap, f.Tables())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := mappings.Resolve(f, cat)
	if err != nil {
		t.Fatal(err)
	}
	return snap, plan
}

// sourcePlan resolves the mapping file against db and closes the snapshot
// it read the catalog in at once (a snapshot kept open would hold locks
// that DDL the test runs waits for), returning the source.
func sourcePlan(t *testing.T, db, file string) (*extract.Source, *mappings.Plan) {
	t.Helper()
	snap, plan := snapshotPlan(t, db, file)
	if err := snap.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return snap.Source(), plan
}
