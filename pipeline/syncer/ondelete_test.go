package syncer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
)

// onDeleteSchema: 10 parents with 3 children each; the mapping below
// writes them three times, once per onDelete.
const onDeleteSchema = `
CREATE TABLE parent (id int PRIMARY KEY, name text);
INSERT INTO parent SELECT i, 'p' || i FROM generate_series(1, 10) i;
CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent ON DELETE CASCADE, v int);
INSERT INTO child SELECT i, 1 + (i - 1) % 10, i FROM generate_series(1, 30) i;
ALTER TABLE parent REPLICA IDENTITY FULL;
ALTER TABLE child REPLICA IDENTITY FULL;`

const onDeleteMapping = `version: 1
collections:
  - name: gone
    table: parent
    filter: "name <> 'hidden'"
    fields: &fields
      - name
      - name: children
        embed:
          table: child
          join: {parent_id: id}
          orderBy: [id]
          fields: [id, v]
  - name: kept
    table: parent
    filter: "name <> 'hidden'"
    onDelete: ignore
    fields: *fields
  - name: tombs
    table: parent
    filter: "name <> 'hidden'"
    onDelete: {tombstone: deletedAt}
    fields: *fields
`

// TestSyncOnDelete runs both methods over a mapping that writes one table
// into three collections, one per onDelete, and checks what becomes of
// the documents of root rows that are deleted, filtered out, brought
// back and truncated: delete deletes them; ignore keeps them unchanged;
// tombstone keeps their content and adds deletedAt, a date set once and
// left alone by later passes, which disappears when the root comes back.
// verify is clean on each state (the kept documents are retained, not
// differences), reports a tombstone whose root exists and an unmarked
// document whose root is gone, and --repair fixes both without deleting.
func TestSyncOnDelete(t *testing.T) {
	for _, method := range []string{job.SyncLogical, job.SyncDiff} {
		t.Run(method, func(t *testing.T) { testSyncOnDelete(t, method) })
	}
}

func testSyncOnDelete(t *testing.T, method string) {
	ctx := context.Background()
	mapping := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mapping, []byte(onDeleteMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	db := testenv.PostgresDB(t)
	testenv.Exec(t, db, onDeleteSchema)
	src, plan := sourcePlan(t, db, mapping)
	uri, mdb := testenv.MongoDB(t)
	opened, err := load.Open(ctx, uri, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close(ctx)
	tg := &tombstoneCounter{Target: opened}
	jobName := fmt.Sprintf("od%d_%d", os.Getpid(), testJobs.Add(1))
	if method == job.SyncLogical {
		t.Cleanup(func() {
			if lg, err := src.Logical(jobName); err == nil {
				_ = lg.Drop(context.Background())
			}
		})
	}
	pass := func() PassStats {
		t.Helper()
		res, err := Sync(ctx, src, plan, tg, Options{Job: jobName, Mapping: mapping, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		return res.Total
	}
	verify := func() map[string]pipeline.VerifyStats {
		t.Helper()
		return verifyOnDelete(t, src, plan, tg, false)
	}
	pass() // the initial copy
	before := map[string]map[int32]bson.M{}
	for _, c := range []string{"gone", "kept", "tombs"} {
		before[c] = docsByID(t, mdb, c)
		if len(before[c]) != 10 {
			t.Fatalf("%s: %d documents after the initial copy, want 10", c, len(before[c]))
		}
	}

	// Parent 1 deleted (its children with it), parent 2 filtered out,
	// parent 3's children changed.
	t0 := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	testenv.Exec(t, db, `DELETE FROM parent WHERE id = 1;
		UPDATE parent SET name = 'hidden' WHERE id = 2;
		UPDATE child SET v = v + 1000 WHERE parent_id = 3;`)
	st := pass()
	t1 := time.Now().Add(time.Second)
	if n := st.Collections["tombs"].Tombstoned; n != 2 {
		t.Errorf("pass tombstoned %d documents of tombs, want 2 (stats %+v)", n, *st.Collections["tombs"])
	}
	if d := st.Collections["kept"]; d != nil && d.Deleted != 0 {
		t.Errorf("pass deleted %d documents of kept (onDelete: ignore)", d.Deleted)
	}
	gone, kept, tombs := docsByID(t, mdb, "gone"), docsByID(t, mdb, "kept"), docsByID(t, mdb, "tombs")
	if _, ok := gone[1]; ok || len(gone) != 8 {
		t.Errorf("gone holds %d documents (1 there: %v), want 8 without 1 and 2", len(gone), ok)
	}
	for _, id := range []int32{1, 2} {
		if d := cmp.Diff(before["kept"][id], kept[id]); d != "" {
			t.Errorf("kept %d changed (-before +after):\n%s", id, d)
		}
	}
	stamps := map[int32]time.Time{}
	for id, d := range tombs {
		at, has := d["deletedAt"]
		if has != (id == 1 || id == 2) {
			t.Errorf("tombs %d: deletedAt %v, want it only on 1 and 2", id, at)
			continue
		}
		if !has {
			continue
		}
		dt, ok := at.(bson.DateTime)
		if !ok || dt.Time().Before(t0) || dt.Time().After(t1) {
			t.Errorf("tombs %d: deletedAt = %#v, want a date between %s and %s", id, at, t0, t1)
		}
		stamps[id] = dt.Time()
		content := bson.M{}
		for k, v := range d {
			if k != "deletedAt" {
				content[k] = v
			}
		}
		if diff := cmp.Diff(before["tombs"][id], content); diff != "" {
			t.Errorf("tombs %d lost its last content (-before +after):\n%s", id, diff)
		}
	}
	if v := firstChildV(kept[3]); v != int32(1003) {
		t.Errorf("kept 3 was not rebuilt: its first child's v is %v, want 1003", v)
	}
	vs := verify()
	if vs["kept"].Retained != 2 || vs["tombs"].Retained != 2 || vs["gone"].Retained != 0 {
		t.Errorf("verify retained kept %d, tombs %d, gone %d; want 2, 2, 0", vs["kept"].Retained, vs["tombs"].Retained, vs["gone"].Retained)
	}

	// Another change: the tombstones keep their first date, and are not
	// marked again.
	testenv.Exec(t, db, `UPDATE child SET v = v + 1 WHERE parent_id = 4`)
	tg.calls = 0
	pass()
	if tg.calls != 0 {
		t.Errorf("a pass over tombstoned documents called Tombstone %d times, want 0", tg.calls)
	}
	for id, d := range docsByID(t, mdb, "tombs") {
		if at, ok := d["deletedAt"].(bson.DateTime); (ok || stamps[id] != time.Time{}) && !at.Time().Equal(stamps[id]) {
			t.Errorf("tombs %d: deletedAt moved from %s to %v", id, stamps[id], d["deletedAt"])
		}
	}
	verify()

	// The roots come back: the documents are rebuilt, without deletedAt.
	testenv.Exec(t, db, `INSERT INTO parent VALUES (1, 'back');
		INSERT INTO child VALUES (100, 1, 7);
		UPDATE parent SET name = 'p2' WHERE id = 2;`)
	pass()
	for _, c := range []string{"gone", "kept", "tombs"} {
		docs := docsByID(t, mdb, c)
		if len(docs) != 10 {
			t.Errorf("%s: %d documents, want 10", c, len(docs))
		}
		if docs[1]["name"] != "back" || len(docs[1]["children"].(bson.A)) != 1 {
			t.Errorf("%s 1 not rebuilt: %v", c, docs[1])
		}
		if _, ok := docs[1]["deletedAt"]; ok {
			t.Errorf("%s 1 came back with deletedAt: %v", c, docs[1])
		}
		if _, ok := docs[2]["deletedAt"]; ok {
			t.Errorf("%s 2 came back with deletedAt: %v", c, docs[2])
		}
	}
	vs = verify()
	if vs["kept"].Retained != 0 || vs["tombs"].Retained != 0 {
		t.Errorf("verify retained kept %d, tombs %d after the roots came back; want 0", vs["kept"].Retained, vs["tombs"].Retained)
	}

	// What verify must report: a tombstone whose root exists (4), a
	// document of tombs whose root is gone without the field (99), a
	// document of gone whose root is gone (99). --repair rewrites 4,
	// tombstones 99 of tombs, deletes 99 of gone.
	if _, err := mdb.Collection("tombs").UpdateOne(ctx, bson.D{{Key: "_id", Value: int32(4)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "deletedAt", Value: bson.NewDateTimeFromTime(time.Now())}}}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"tombs", "gone"} {
		if _, err := mdb.Collection(c).InsertOne(ctx, bson.D{{Key: "_id", Value: int32(99)}, {Key: "name", Value: "stray"}}); err != nil {
			t.Fatal(err)
		}
	}
	vs = verifyOnDelete(t, src, plan, tg, true)
	if s := vs["tombs"]; s.Different != 1 || s.Unexpected != 1 || s.Rewritten != 1 || s.Tombstoned != 1 || s.Removed != 0 {
		t.Errorf("verify --repair of tombs: %+v; want 1 different (rewritten), 1 unexpected (tombstoned)", s)
	}
	if s := vs["gone"]; s.Unexpected != 1 || s.Removed != 1 {
		t.Errorf("verify --repair of gone: %+v; want 1 unexpected, removed", s)
	}
	vs = verify()
	if vs["tombs"].Retained != 1 {
		t.Errorf("after the repair, tombs retains %d documents, want 1 (99, tombstoned)", vs["tombs"].Retained)
	}
	if d := docsByID(t, mdb, "tombs")[99]; d["name"] != "stray" || d["deletedAt"] == nil {
		t.Errorf("tombs 99 after the repair: %v; want its content and deletedAt", d)
	}

	// TRUNCATE of the root table: every document of gone is deleted,
	// every one of kept and tombs stays (tombs' with deletedAt).
	testenv.Exec(t, db, `TRUNCATE parent CASCADE`)
	st = pass()
	if n := len(docsByID(t, mdb, "gone")); n != 0 {
		t.Errorf("gone holds %d documents after TRUNCATE, want 0", n)
	}
	if n := len(docsByID(t, mdb, "kept")); n != 10 {
		t.Errorf("kept holds %d documents after TRUNCATE, want 10", n)
	}
	tombs = docsByID(t, mdb, "tombs")
	for id, d := range tombs {
		if d["deletedAt"] == nil {
			t.Errorf("tombs %d has no deletedAt after TRUNCATE", id)
		}
	}
	if len(tombs) != 11 || st.Collections["tombs"].Tombstoned != 10 {
		t.Errorf("tombs: %d documents, %d tombstoned by the pass; want 11, 10", len(tombs), st.Collections["tombs"].Tombstoned)
	}
	vs = verify()
	if vs["kept"].Retained != 10 || vs["tombs"].Retained != 11 {
		t.Errorf("verify after TRUNCATE retained kept %d, tombs %d; want 10, 11", vs["kept"].Retained, vs["tombs"].Retained)
	}
}

// verifyOnDelete runs verify (with repair, when asked) and returns its
// counts by collection; without repair, it fails the test on any
// difference, and runs verify with the oracle too, which must count the
// same.
func verifyOnDelete(t *testing.T, src *extract.Source, plan *mappings.Plan, tg load.Target, repair bool) map[string]pipeline.VerifyStats {
	t.Helper()
	ctx := context.Background()
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close(ctx)
	run := func(oracle bool) map[string]pipeline.VerifyStats {
		var diffs []pipeline.Difference
		res, err := pipeline.Verify(ctx, snap, plan, tg, pipeline.VerifyOptions{TempDir: t.TempDir(), Repair: repair, Oracle: oracle, Difference: func(d pipeline.Difference) error {
			diffs = append(diffs, d)
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !repair && res.Differences() > 0 {
			t.Errorf("verify (oracle %v): %d differences: %+v", oracle, res.Differences(), diffs)
		}
		out := map[string]pipeline.VerifyStats{}
		for _, c := range res.Collections {
			out[c.Collection] = c
		}
		return out
	}
	out := run(false)
	if !repair {
		if d := cmp.Diff(out, run(true), cmpopts.IgnoreFields(pipeline.VerifyStats{}, "OracleParts")); d != "" {
			t.Errorf("verify with the oracle counts otherwise (-builder +oracle):\n%s", d)
		}
	}
	return out
}

// docsByID reads every document of coll, by _id (int32).
func docsByID(t *testing.T, db *mongo.Database, coll string) map[int32]bson.M {
	t.Helper()
	ctx := context.Background()
	cur, err := db.Collection(coll).Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	out := map[int32]bson.M{}
	for _, d := range docs {
		out[d["_id"].(int32)] = d
	}
	return out
}

// firstChildV is the v of a document's first embedded child.
func firstChildV(d bson.M) any {
	children, _ := d["children"].(bson.A)
	if len(children) == 0 {
		return nil
	}
	switch c := children[0].(type) {
	case bson.D:
		for _, e := range c {
			if e.Key == "v" {
				return e.Value
			}
		}
	case bson.M:
		return c["v"]
	}
	return nil
}

// tombstoneCounter counts the calls of Tombstone.
type tombstoneCounter struct {
	load.Target
	calls int
}

func (c *tombstoneCounter) Tombstone(ctx context.Context, coll string, sel load.Selection, field string, at time.Time) (int64, error) {
	c.calls++
	return c.Target.Tombstone(ctx, coll, sel, field, at)
}
