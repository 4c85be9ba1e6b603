package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
)

// remapMapping is ackMapping with a second collection, one document per
// child.
const remapMapping = ackMapping + `  - name: kids
    table: child
    fields: [parent_id, v]
`

// remapRun runs sync passes of a fixture's job with the mapping text
// given, through a counting target.
type remapRun struct {
	t      *testing.T
	f      *fixture
	ct     *countingTarget
	method string
	// passes are the passes of the last run; notices what it said.
	passes  []PassStats
	notices []string
}

func newRemapRun(t *testing.T, method string) *remapRun {
	f := newFixture(t, ackSchema, "remap")
	return &remapRun{t: t, f: f, ct: &countingTarget{Target: f.target}, method: method}
}

// sync writes text as the mapping file and runs one --once pass of the
// job with it.
func (r *remapRun) sync(text string) (*Result, error) {
	r.t.Helper()
	if err := os.WriteFile(r.f.mapping, []byte(text), 0o644); err != nil {
		r.t.Fatal(err)
	}
	src, plan := sourcePlan(r.t, r.f.db, r.f.mapping)
	r.ct.reset()
	r.passes, r.notices = nil, nil
	return Sync(context.Background(), src, plan, r.ct, Options{Job: r.f.job, Mapping: r.f.mapping, Method: r.method,
		Pass:   func(p PassStats) { r.passes = append(r.passes, p) },
		Notice: func(msg string) { r.notices = append(r.notices, msg) }})
}

func (r *remapRun) mustSync(text string) *Result {
	r.t.Helper()
	res, err := r.sync(text)
	if err != nil {
		r.t.Fatal(err)
	}
	return res
}

// record is the job's record as the target holds it.
func (r *remapRun) record() *job.Record {
	r.t.Helper()
	rec, err := job.Load(context.Background(), r.f.target.Records(), r.f.job)
	if err != nil || rec == nil {
		r.t.Fatalf("the job's record: %v, %v", rec, err)
	}
	return rec
}

// verify checks that the target holds exactly what the mapping file
// (as last written) gives.
func (r *remapRun) verify() {
	r.t.Helper()
	ctx := context.Background()
	snap, plan := snapshotPlan(r.t, r.f.db, r.f.mapping)
	res, err := pipeline.Verify(ctx, snap, plan, r.f.target, pipeline.VerifyOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	if n := res.Differences(); n != 0 {
		r.t.Errorf("the target differs from the source in %d documents", n)
	}
}

// written counts the documents the last run wrote to coll.
func (r *remapRun) written(coll string) int {
	n := 0
	for _, c := range r.ct.writes[coll] {
		n += c
	}
	return n
}

// TestRemapLogical: a field added to one collection of a logical job
// rebuilds that collection alone (each of its 300 documents written once
// by the rebuild, none of the other collection's), the changes made
// before the run are applied under the new mapping, the record takes the
// new mapping, and the target is exact. A change of the file's comments
// alone rebuilds nothing.
func TestRemapLogical(t *testing.T) {
	r := newRemapRun(t, job.SyncLogical)
	r.mustSync(remapMapping)
	testenv.Exec(t, r.f.db, `UPDATE child SET v = v + 1 WHERE parent_id = 3`)

	added := strings.Replace(remapMapping, "fields: [parent_id, v]", "fields: [parent_id, v, {name: twice, expr: 'v * 2'}]", 1)
	r.mustSync(added)
	var rebuild *PassStats
	for i, p := range r.passes {
		if len(p.Rebuilt) > 0 {
			rebuild = &r.passes[i]
		}
	}
	if rebuild == nil {
		t.Fatalf("no pass rebuilt anything: %+v", r.passes)
	}
	if !slices.Equal(rebuild.Rebuilt, []string{"kids: the mapping changed (its documents changed)"}) {
		t.Errorf("rebuilt %q", rebuild.Rebuilt)
	}
	if c := rebuild.Collections["kids"]; c == nil || c.Written != 300 || c.Deleted != 0 {
		t.Errorf("the rebuild wrote kids %+v, want all 300 written", c)
	}
	if c := rebuild.Collections["parents"]; c != nil && c.Written+c.Deleted > 0 {
		t.Errorf("the rebuild wrote parents: %+v", c)
	}
	// The change before the run: parent 3 and its 3 children, after the
	// rebuild, under the new mapping.
	if w := r.written("parents"); w != 1 || r.ct.writes["parents"]["3"] != 1 {
		t.Errorf("parents written %v, want parent 3 once", r.ct.writes["parents"])
	}
	if w := r.written("kids"); w != 303 {
		t.Errorf("kids written %d times, want 300 by the rebuild and 3 by the stream", w)
	}
	rec := r.record()
	_, plan := sourcePlan(t, r.f.db, r.f.mapping)
	if !slices.EqualFunc(rec.Prints, mappings.Fingerprints(plan), func(a, b mappings.CollectionPrint) bool {
		return a.Name == b.Name && slices.Equal(a.Entries, b.Entries)
	}) || len(rec.Rebuilding) > 0 {
		t.Errorf("the record holds prints %+v, rebuilding %v; want the new mapping's, none", rec.Prints, rec.Rebuilding)
	}
	r.verify()

	// Comments and layout only: the documents are the same.
	testenv.Exec(t, r.f.db, `UPDATE child SET v = v + 1 WHERE parent_id = 4`)
	r.mustSync("# the same mapping, commented\n" + strings.ReplaceAll(added, "\n", "\n\n"))
	if w := r.written("kids") + r.written("parents"); w != 4 {
		t.Errorf("after a comment-only change, %d documents written (%v), want parent 4 and its 3 children", w, r.ct.writes)
	}
	if rec := r.record(); rec.MappingHash == "" || !strings.HasPrefix(rec.Mapping, r.f.mapping) {
		t.Errorf("record mapping %q", rec.Mapping)
	}
	r.verify()
}

// TestRemapDiff: a diff job with a field added to one collection writes
// that collection's documents and none of the other's; a collection
// removed from the mapping is left as it is, with a notice; a collection
// added is copied.
func TestRemapDiff(t *testing.T) {
	r := newRemapRun(t, job.SyncDiff)
	r.mustSync(remapMapping)
	added := strings.Replace(remapMapping, "fields: [parent_id, v]", "fields: [parent_id, v, {name: twice, expr: 'v * 2'}]", 1)
	r.mustSync(added)
	if k, p := r.written("kids"), r.written("parents"); k != 300 || p != 0 {
		t.Errorf("written: kids %d, parents %d; want 300 and 0", k, p)
	}
	r.verify()

	// kids removed, its documents left; others added (a copy).
	removed := ackMapping + "  - name: others\n    table: child\n    fields: [v]\n"
	r.mustSync(removed)
	if k, p, o := r.written("kids"), r.written("parents"), r.written("others"); k != 0 || p != 0 || o != 300 || len(r.ct.deletes) > 0 {
		t.Errorf("written: kids %d, parents %d, others %d, deletes %v; want 0, 0, 300, none", k, p, o, r.ct.deletes)
	}
	if !slices.ContainsFunc(r.notices, func(n string) bool { return strings.Contains(n, "collection kids is no longer in the mapping") }) {
		t.Errorf("no notice of the collection removed: %q", r.notices)
	}
	n := 0
	if _, err := r.f.target.Scan(context.Background(), "kids", func([]byte) error { n++; return nil }); err != nil || n != 300 {
		t.Errorf("kids holds %d documents (%v), want its 300 left", n, err)
	}
	r.verify()
}

// TestRemapRefused: what cannot be applied in place is refused with its
// reason before anything is written: a shard key changed, an index the
// target holds declared with other options (denorm never drops one), a
// changed mapping for a record of an older denorm (no fingerprints),
// which takes them from a run whose file is unchanged.
func TestRemapRefused(t *testing.T) {
	ctx := context.Background()
	r := newRemapRun(t, job.SyncDiff)
	indexed := remapMapping + "    indexes:\n      - keys: v\n"
	r.mustSync(indexed)

	var changed *job.MappingChangedError
	_, err := r.sync(indexed + "    shardKey: v\n")
	if !errors.As(err, &changed) || !strings.Contains(err.Error(), "shard key of collection kids changed") {
		t.Errorf("a shard key added: %v, want it refused", err)
	}
	if w := r.written("kids") + r.written("parents"); w != 0 {
		t.Errorf("a refused run wrote %d documents", w)
	}

	_, err = r.sync(strings.Replace(indexed, "- keys: v", "- {keys: v, unique: true}", 1))
	if err == nil || !strings.Contains(err.Error(), "never drops") {
		t.Errorf("an index made unique: %v, want it refused, saying to drop it", err)
	}
	// Dropped by hand (here with its collection, which the diff pass
	// then copies again), it is made as declared.
	if _, err := r.f.target.Drop(ctx, "kids"); err != nil {
		t.Fatal(err)
	}
	r.mustSync(strings.Replace(indexed, "- keys: v", "- {keys: v, unique: true}", 1))
	r.verify()

	// A record of an older denorm: no fingerprints.
	rec := r.record()
	rec.Prints = nil
	body, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.f.target.Records().Save(ctx, &load.Record{ID: rec.ID, Job: rec.Job, Updated: time.Now().UTC(), Body: body}); err != nil {
		t.Fatal(err)
	}
	_, err = r.sync(indexed)
	if !errors.As(err, &changed) || !strings.Contains(err.Error(), "older denorm") {
		t.Errorf("a changed mapping for a record without fingerprints: %v, want it refused", err)
	}
	r.mustSync(strings.Replace(indexed, "- keys: v", "- {keys: v, unique: true}", 1))
	if rec := r.record(); len(rec.Prints) != 2 {
		t.Errorf("an unchanged mapping's run left the record with prints %+v, want both collections'", rec.Prints)
	}
}

// TestUnreadColumnChange: a column no mapping reads added to a mapped
// table, written and dropped while a logical job follows it does not stop
// the job, which rebuilds nothing for it; the target stays exact.
func TestUnreadColumnChange(t *testing.T) {
	r := newRemapRun(t, job.SyncLogical)
	r.mustSync(remapMapping)
	testenv.Exec(t, r.f.db, `ALTER TABLE child ADD COLUMN note text;
		UPDATE child SET note = 'x' WHERE parent_id = 5;
		UPDATE child SET v = v + 1, note = 'y' WHERE parent_id = 6;
		ALTER TABLE child DROP COLUMN note;
		UPDATE child SET v = v + 1 WHERE parent_id = 7;`)
	r.mustSync(remapMapping)
	for _, p := range r.passes {
		if len(p.Rebuilt) > 0 {
			t.Errorf("rebuilt %q", p.Rebuilt)
		}
	}
	if w := r.written("parents"); w != 2 || r.ct.writes["parents"]["5"] != 0 {
		t.Errorf("parents written %v, want 6 and 7 (5 changed only the unread column)", r.ct.writes["parents"])
	}
	r.verify()
}

// TestRemapAfterColumnDropped: a column the mapping reads is dropped
// under a logical job (a run with that mapping is refused: it no longer
// resolves, or, following, stops with a SchemaChangeError); with the
// mapping changed not to read it, the next run rebuilds the collections
// that read it and streams on, with no --drop: the target is exact.
func TestRemapAfterColumnDropped(t *testing.T) {
	r := newRemapRun(t, job.SyncLogical)
	r.mustSync(remapMapping)
	testenv.Exec(t, r.f.db, `UPDATE child SET v = v + 1 WHERE parent_id = 8;
		ALTER TABLE child DROP COLUMN v;
		UPDATE parent SET name = 'renamed' WHERE id = 9;
		INSERT INTO child VALUES (1001, 9);`)
	without := strings.Replace(strings.Replace(remapMapping, "fields: [id, v]", "fields: [id]", 1), "fields: [parent_id, v]", "fields: [parent_id]", 1)
	r.mustSync(without)
	if got := r.passes[0].Rebuilt; !slices.Equal(got, []string{"parents: the mapping changed (its documents changed)", "kids: the mapping changed (its documents changed)"}) {
		t.Errorf("rebuilt %q", got)
	}
	r.verify()
	testenv.Exec(t, r.f.db, `INSERT INTO child VALUES (1002, 10); DELETE FROM child WHERE id = 1;`)
	r.mustSync(without)
	r.verify()
}

// TestRemapNewTable: a logical job's mapping changed to embed a table it
// did not read: the table's rows written before the change reach the
// documents by the rebuild, those written after by the stream (the
// publication now has the table).
func TestRemapNewTable(t *testing.T) {
	r := newRemapRun(t, job.SyncLogical)
	testenv.Exec(t, r.f.db, `CREATE TABLE tag (id int PRIMARY KEY, parent_id int REFERENCES parent, label text);
		ALTER TABLE tag REPLICA IDENTITY FULL;
		INSERT INTO tag SELECT i, 1 + i % 10, 'tag' || i FROM generate_series(1, 30) i;`)
	r.mustSync(remapMapping)
	testenv.Exec(t, r.f.db, `INSERT INTO tag VALUES (31, 1, 'before the change'); UPDATE child SET v = 0 WHERE id = 11;`)
	tagged := strings.Replace(remapMapping, "          fields: [id, v]\n", `          fields: [id, v]
      - name: tags
        embed: {table: tag, join: {parent_id: id}, orderBy: id, fields: [label]}
`, 1)
	r.mustSync(tagged)
	if got := r.passes[0].Rebuilt; !slices.Equal(got, []string{"parents: the mapping changed (its documents changed)"}) {
		t.Errorf("rebuilt %q", got)
	}
	r.verify()
	testenv.Exec(t, r.f.db, `INSERT INTO tag VALUES (32, 2, 'after'); UPDATE tag SET label = 'moved', parent_id = 3 WHERE id = 1; DELETE FROM tag WHERE id = 2;`)
	res := r.mustSync(tagged)
	if c := res.Total.Tables["public.tag"]; c == nil || c.Inserts != 1 || c.Updates != 1 || c.Deletes != 1 {
		t.Errorf("the stream's changes of tag: %+v, want 1 insert, 1 update, 1 delete", c)
	}
	if w := r.written("parents"); w != 2 || r.ct.writes["parents"]["2"] != 1 || r.ct.writes["parents"]["3"] != 1 {
		t.Errorf("parents written %v, want 2 and 3 (the tags' parents, old and new)", r.ct.writes["parents"])
	}
	r.verify()
}
