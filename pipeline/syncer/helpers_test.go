package syncer

import (
	"context"
	"fmt"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"os"
	"path/filepath"
	"testing"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// snapshotPlan opens a snapshot of db (closed at the end of the test) and
// resolves the mapping file against it.
func snapshotPlan(t testing.TB, db, file string) (*extract.Snapshot, *mappings.Plan) {
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
func sourcePlan(t testing.TB, db, file string) (*extract.Source, *mappings.Plan) {
	t.Helper()
	snap, plan := snapshotPlan(t, db, file)
	if err := snap.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return snap.Source(), plan
}

// fixture is what the sync tests over ackSchema start from: the mapping
// file (ackMapping), a source database holding schema, a target on the
// test server and a job name unique on it, whose replication slot is
// dropped when the test ends.
type fixture struct {
	mapping, db string
	target      load.Target
	tdb         *mongo.Database // the target's database
	job         string
}

func newFixture(t *testing.T, schema, job string) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{mapping: filepath.Join(t.TempDir(), "m.yaml"), db: testenv.PostgresDB(t), job: fmt.Sprintf("%s_%d", job, os.Getpid())}
	if err := os.WriteFile(f.mapping, []byte(ackMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Exec(t, f.db, schema)
	uri, tdb := testenv.MongoDB(t)
	tg, err := load.Open(ctx, uri, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.target, f.tdb = tg, tdb
	t.Cleanup(func() {
		_ = tg.Close(context.Background())
		if src, err := extract.ParseSource(f.db); err == nil {
			if lg, err := src.Logical(f.job); err == nil {
				_ = lg.Drop(context.Background())
			}
		}
	})
	return f
}
