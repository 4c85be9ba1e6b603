package syncer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform"
)

// errAckLost is the failure of a write the server applied whose
// acknowledgement never arrived (a connection cut just after it).
var errAckLost = errors.New("injected: the write was applied, its acknowledgement lost")

// ackLossTarget is a server target whose writes all reach the server;
// once armed, the next write fails after it did, as if its
// acknowledgement were lost. It records the _ids of every write that was
// acknowledged.
type ackLossTarget struct {
	load.Target
	mu    sync.Mutex
	armed bool
	acked map[string]bool // "<collection>/<_id>"
	lost  int             // writes whose acknowledgement was lost
}

func (a *ackLossTarget) Write(ctx context.Context, coll string, docs []transform.Document) ([]transform.Reject, error) {
	rejects, err := a.Target.Write(ctx, coll, docs)
	if err != nil {
		return rejects, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.armed {
		a.armed = false
		a.lost++
		return nil, errAckLost
	}
	for _, d := range docs {
		a.acked[fmt.Sprintf("%s/%v", coll, d.ID)] = true
	}
	return rejects, nil
}

func (a *ackLossTarget) arm() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed = true
}

// ackSchema: 100 parents with 3 children each, embedded.
const ackSchema = `
CREATE TABLE parent (id int PRIMARY KEY, name text);
INSERT INTO parent SELECT i, 'p' || i FROM generate_series(1, 100) i;
CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent, v int);
INSERT INTO child SELECT i, 1 + (i - 1) % 100, i FROM generate_series(1, 300) i;
ALTER TABLE child REPLICA IDENTITY FULL;`

const ackMapping = `version: 1
collections:
  - name: parents
    table: parent
    fields:
      - name
      - name: children
        embed:
          table: child
          join: {parent_id: id}
          orderBy: [id]
          fields: [id, v]
`

// TestPositionNeverPassesAck injects the loss of a write's
// acknowledgement (the documents are in the target, the run does not know
// it) and checks that the position the job saved never covers what the
// target did not acknowledge: for migrate (the streams' keys and row
// counts), for logical sync (the WAL position stays before the change
// whose documents were written unacknowledged) and for diff sync (the
// pass is not recorded). A rerun then completes and the target is exact.
func TestPositionNeverPassesAck(t *testing.T) {
	ctx := context.Background()
	mapping := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mapping, []byte(ackMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) (db string, uri string) {
		db = testenv.PostgresDB(t)
		testenv.Exec(t, db, ackSchema)
		uri, _ = testenv.MongoDB(t)
		return db, uri
	}
	target := func(t *testing.T, uri string) *ackLossTarget {
		tg, err := load.Open(ctx, uri, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tg.Close(ctx) })
		return &ackLossTarget{Target: tg, acked: map[string]bool{}}
	}
	record := func(t *testing.T, tg load.Target, id string) *job.Record {
		t.Helper()
		r, err := job.Load(ctx, tg.Records(), id)
		if err != nil || r == nil {
			t.Fatalf("the job's record: %v, %v", r, err)
		}
		return r
	}
	names := func(t *testing.T, uri string) map[string]string {
		t.Helper()
		tg, err := load.Open(ctx, uri, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer tg.Close(ctx)
		out := map[string]string{}
		if _, err := tg.Scan(ctx, "parents", func(doc []byte) error {
			id, err := load.LookupValue(doc, "_id")
			if err != nil {
				return err
			}
			name, err := load.LookupValue(doc, "name")
			if err != nil {
				return err
			}
			out[fmt.Sprint(id)] = fmt.Sprint(name)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("migrate", func(t *testing.T) {
		db, uri := open(t)
		snap, plan := snapshotPlan(t, db, mapping)
		tg := target(t, uri)
		// The third write of 10 documents loses its acknowledgement.
		writes := 0
		m := pipeline.Migration{Snapshot: snap, Plan: plan, Target: tg, Indexes: pipeline.IndexesNone,
			Job: &job.Spec{Name: "ack", Partitions: 1, Workers: 1, Mapping: mapping, Version: "test"},
			Run: pipeline.JobOptions{Options: pipeline.Options{BatchSize: 10, Progress: func(pipeline.Stats) {
				if writes++; writes == 2 {
					tg.arm()
				}
			}}},
		}
		_, err := pipeline.Migrate(ctx, m)
		if !errors.Is(err, errAckLost) || tg.lost != 1 {
			t.Fatalf("migrate = %v (%d writes lost), want the injected failure", err, tg.lost)
		}
		rec := record(t, tg, "ack")
		if len(rec.Streams) != 1 {
			t.Fatalf("streams %+v", rec.Streams)
		}
		s := rec.Streams[0]
		after := 0
		if len(s.After) == 1 && s.After[0] != nil {
			after, _ = strconv.Atoi(*s.After[0])
		}
		if after == 0 || s.Done {
			t.Fatalf("the record saved no position before the failure: %+v", s)
		}
		for id := 1; id <= after; id++ {
			if !tg.acked[fmt.Sprintf("parents/%d", id)] {
				t.Errorf("the position (after key %d) covers document %d, whose write was not acknowledged", after, id)
			}
		}
		if s.Rows > int64(len(tg.acked)) || s.Written > int64(len(tg.acked)) {
			t.Errorf("the record counts %d rows, %d written; %d documents were acknowledged", s.Rows, s.Written, len(tg.acked))
		}
		// The resume writes the rest (and the unacknowledged batch again).
		resumed := target(t, uri)
		m.Target, m.Run.Progress = resumed, nil
		m.Job.Resume = true
		if _, err := pipeline.Migrate(ctx, m); err != nil {
			t.Fatal(err)
		}
		if got := names(t, uri); len(got) != 100 || got["57"] != "p57" {
			t.Errorf("after the resume the target holds %d documents", len(got))
		}
	})

	// applying is the end of the last batch of changes a sync began to
	// apply: the position once it is applied.
	var applying extract.LSN
	syncOnce := func(t *testing.T, db, method string, tg load.Target) error {
		snap, plan := snapshotPlan(t, db, mapping)
		_, err := Sync(ctx, snap.Source(), plan, tg, Options{Job: fmt.Sprintf("ack_%s_%d", method, os.Getpid()), Mapping: mapping, Method: method, BatchSize: 10,
			Debug: func(msg string, args ...any) {
				if msg == "applying a batch" {
					applying = args[len(args)-1].(extract.LSN)
				}
			}})
		return err
	}

	t.Run("logical", func(t *testing.T) {
		db, uri := open(t)
		tg := target(t, uri)
		id := fmt.Sprintf("ack_%s_%d", job.SyncLogical, os.Getpid())
		t.Cleanup(func() {
			src, err := extract.ParseSource(db)
			if err == nil {
				if lg, err := src.Logical(id); err == nil {
					_ = lg.Drop(context.Background())
				}
			}
		})
		if err := syncOnce(t, db, job.SyncLogical, tg); err != nil {
			t.Fatal(err)
		}
		before := record(t, tg, id).Sync.Position
		testenv.Exec(t, db, `UPDATE parent SET name = 'renamed ' || id WHERE id <= 40`)
		tg.arm()
		applying = 0
		if err := syncOnce(t, db, job.SyncLogical, tg); !errors.Is(err, errAckLost) {
			t.Fatalf("sync = %v, want the injected failure", err)
		}
		// The change's transaction ends at lsn: a position at or past it
		// would say its documents are in the target.
		lsn := applying
		after := record(t, tg, id).Sync.Position
		if lsn == 0 || after < before || after >= lsn {
			t.Errorf("position %s after the lost acknowledgement: it must stay before %s, the end of the change's transaction (it was %s)", after, lsn, before)
		}
		if err := syncOnce(t, db, job.SyncLogical, tg); err != nil {
			t.Fatal(err)
		}
		if got := names(t, uri); got["40"] != "renamed 40" || got["41"] != "p41" {
			t.Errorf("after the rerun: %q, %q", got["40"], got["41"])
		}
		if p := record(t, tg, id).Sync.Position; p < lsn {
			t.Errorf("position %s after the rerun, not past the change (%s)", p, lsn)
		}
	})

	t.Run("diff", func(t *testing.T) {
		db, uri := open(t)
		tg := target(t, uri)
		id := fmt.Sprintf("ack_%s_%d", job.SyncDiff, os.Getpid())
		if err := syncOnce(t, db, job.SyncDiff, tg); err != nil { // the initial copy
			t.Fatal(err)
		}
		if err := syncOnce(t, db, job.SyncDiff, tg); err != nil { // pass 1
			t.Fatal(err)
		}
		before := record(t, tg, id).Sync
		testenv.Exec(t, db, `UPDATE parent SET name = 'renamed ' || id WHERE id <= 40`)
		tg.arm()
		if err := syncOnce(t, db, job.SyncDiff, tg); !errors.Is(err, errAckLost) {
			t.Fatalf("sync = %v, want the injected failure", err)
		}
		after := record(t, tg, id).Sync
		if after.Passes != before.Passes || !after.LastSnapshot.Equal(before.LastSnapshot) || after.Written != before.Written {
			t.Errorf("a pass whose write was not acknowledged was recorded: before %+v, after %+v", before, after)
		}
		if err := syncOnce(t, db, job.SyncDiff, tg); err != nil {
			t.Fatal(err)
		}
		if got := names(t, uri); got["40"] != "renamed 40" || got["41"] != "p41" {
			t.Errorf("after the rerun: %q, %q", got["40"], got["41"])
		}
		if r := record(t, tg, id).Sync; r.Passes != before.Passes+1 {
			t.Errorf("passes %d after the rerun, want %d", r.Passes, before.Passes+1)
		}
	})
}
