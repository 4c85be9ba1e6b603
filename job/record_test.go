package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/transform"
)

func validRecord() *Record {
	k := "42"
	return &Record{ID: "j", Format: Format, Job: "j", Partitions: 1, Workers: 1, MappingHash: "abc",
		Phase: PhaseRunning, Collection: "c", Started: time.Unix(0, 0).UTC(), Updated: time.Unix(1, 0).UTC(),
		Streams: []Stream{{Entry: 0, Collection: "c", After: extract.Key{&k, nil}, Pager: &transform.PagerState{ParentKey: "7", Page: 3}, Rows: 5, Written: 5}},
		Files:   map[string]int64{"c.jsonl": 10},
		Sync:    &Sync{Method: SyncLogical, Slot: "denorm_j", Position: 0x16B374D848, Passes: 2}}
}

// recordTargets are both kinds of target, each with a way to plant a
// record's body as another program (or a disk fault) would leave it.
var recordTargets = []struct {
	name  string
	fresh func(t *testing.T) (load.Target, func(id, body string))
}{
	{"directory", func(t *testing.T) (load.Target, func(string, string)) {
		dir := t.TempDir()
		return openDir(t, dir), func(id, body string) {
			p := filepath.Join(dir, load.RecordCollection, id+".json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}},
	{"ferretdb", func(t *testing.T) (load.Target, func(string, string)) {
		uri, db := testenv.MongoDB(t)
		tg, err := load.Open(context.Background(), uri, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tg.Close(context.Background()) })
		return tg, func(id, body string) {
			coll := db.Collection(load.RecordCollection)
			ctx := context.Background()
			if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
				t.Fatal(err)
			}
			if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "job", Value: id}, {Key: "checkpoint", Value: body}}); err != nil {
				t.Fatal(err)
			}
		}
	}},
}

// TestRecordStored: a record comes back from either kind of target as it
// was saved, its positions typed (the LSN is text in the store and an
// extract.LSN in memory); a record that cannot be read or makes no sense
// is a *CorruptError pointing to --restart, beside the others in List.
func TestRecordStored(t *testing.T) {
	ctx := context.Background()
	for _, k := range recordTargets {
		t.Run(k.name, func(t *testing.T) {
			target, plant := k.fresh(t)
			store := target.Records()
			want := validRecord()
			saveRecord(t, target, want)
			got, err := Load(ctx, store, "j")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
			lr, err := store.Load(ctx, "j")
			if err != nil || !strings.Contains(string(lr.Body), `"position": "16/B374D848"`) {
				t.Errorf("the stored position is not PostgreSQL's text: %s, %v", lr.Body, err)
			}
			other := validRecord()
			other.ID, other.Job = "k", "k"
			saveRecord(t, target, other)
			list, bad, err := List(ctx, store)
			if err != nil || len(bad) != 0 || len(list) != 2 || list[0].ID != "j" || list[1].ID != "k" {
				t.Fatalf("List = %v, %v, %v; want j and k", list, bad, err)
			}
			if err := store.Delete(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			corrupt := map[string]string{
				"truncated":     `{"id": "j", "format": 1, "job"`,
				"unknown_field": `{"id":"j","format":1,"job":"j","mappingHash":"a","phase":"running","workers":1,"partitions":1,"bogus":1}`,
				"bad_phase":     `{"id":"j","format":1,"job":"j","mappingHash":"a","phase":"flying","workers":1,"partitions":1}`,
				"future_format": `{"id":"j","format":99,"job":"j","mappingHash":"a","phase":"running","workers":1,"partitions":1}`,
				"other_job":     `{"id":"k","format":1,"job":"k","mappingHash":"a","phase":"running","workers":1,"partitions":1}`,
				"bad_file":      `{"id":"j","format":1,"job":"j","mappingHash":"a","phase":"running","workers":1,"partitions":1,"files":{"../x":1}}`,
				"bad_position":  `{"id":"j","format":1,"job":"j","mappingHash":"a","phase":"running","workers":1,"partitions":1,"sync":{"method":"logical","slot":"s","position":"16-B3"}}`,
				"slotless":      `{"id":"j","format":1,"job":"j","mappingHash":"a","phase":"running","workers":1,"partitions":1,"sync":{"method":"logical"}}`,
			}
			for name, text := range corrupt {
				t.Run(name, func(t *testing.T) {
					plant("j", text)
					_, err := Load(ctx, store, "j")
					var ce *CorruptError
					if !errors.As(err, &ce) || ce.ID != "j" || !strings.Contains(err.Error(), "--restart") {
						t.Fatalf("Load = %v, want a CorruptError pointing to --restart", err)
					}
					list, bad, err := List(ctx, store)
					if err != nil || len(list) != 0 || len(bad) != 1 || !errors.As(bad[0], &ce) {
						t.Fatalf("List = %v, %v, %v; want the corrupt record beside no others", list, bad, err)
					}
				})
			}
		})
	}
}

// countingStore counts the records saved.
type countingStore struct {
	load.RecordStore
	saves int
}

func (c *countingStore) Save(ctx context.Context, r *load.Record) error {
	c.saves++
	return c.RecordStore.Save(ctx, r)
}

// TestAdvance: positions move only through Advance - forwards, on a
// stream the record has -, which saves when the position asks for it (a
// stream done, a WAL position) or when Saving.Every has passed; Update
// refuses to move one; a Transient job saves nothing.
func TestAdvance(t *testing.T) {
	ctx := context.Background()
	target := openDir(t, t.TempDir())
	jb, err := Prepare(ctx, target, Spec{Name: "j", Partitions: 1, Workers: 1, Mapping: mappingFile(t), Version: "1.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer jb.Lease.Release(ctx)
	counter := &countingStore{}
	jb.WrapStore(func(s load.RecordStore) load.RecordStore { counter.RecordStore = s; return counter })
	jb.SetSaving(Saving{Every: time.Hour})
	jb.Update(func(r *Record) { r.Streams = append(r.Streams, Stream{Entry: 0, Collection: "c", Worker: 0}) })
	k1, k2 := "1", "2"
	if err := jb.Advance(ctx, StreamAt{Entry: 0, After: extract.Key{&k1}, Rows: 1, Written: 1}); err != nil {
		t.Fatal(err)
	}
	if counter.saves != 1 { // the first save is due at once
		t.Fatalf("%d saves after the first position", counter.saves)
	}
	if err := jb.Advance(ctx, StreamAt{Entry: 0, After: extract.Key{&k2}, Rows: 2, Written: 2}); err != nil {
		t.Fatal(err)
	}
	if counter.saves != 1 {
		t.Errorf("a position saved before Every passed (%d saves)", counter.saves)
	}
	if err := jb.Advance(ctx, StreamAt{Entry: 0, After: extract.Key{&k2}, Done: true, Rows: 2, Written: 2}); err != nil {
		t.Fatal(err)
	}
	if counter.saves != 2 {
		t.Errorf("a stream done was not saved at once (%d saves)", counter.saves)
	}
	stored, err := Load(ctx, target.Records(), "j")
	if err != nil || len(stored.Streams) != 1 || !stored.Streams[0].Done || *stored.Streams[0].After[0] != "2" || stored.Streams[0].Rows != 2 {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	if err := jb.Advance(ctx, StreamAt{Entry: 0, After: extract.Key{&k1}}); err == nil {
		t.Error("a done stream moved back")
	}
	if err := jb.Advance(ctx, StreamAt{Entry: 3}); err == nil {
		t.Error("a position of a stream the record does not have")
	}
	if err := jb.Advance(ctx, WALAt{LSN: 10}); err == nil {
		t.Error("a WAL position for a job that is no logical sync")
	}
	jb.Update(func(r *Record) { r.Sync = &Sync{Method: SyncLogical, Slot: "s"} })
	if err := jb.Advance(ctx, WALAt{LSN: 10}); err != nil || counter.saves != 3 {
		t.Fatalf("WAL position: %v, %d saves", err, counter.saves)
	}
	if err := jb.Advance(ctx, WALAt{LSN: 9}); err == nil || jb.Record().Sync.Position != 10 {
		t.Errorf("the WAL position moved back: %v, %s", err, jb.Record().Sync.Position)
	}
	for name, fn := range map[string]func(r *Record){
		"wal":        func(r *Record) { r.Sync.Position = 11 },
		"stream key": func(r *Record) { r.Streams[0].After = extract.Key{&k1} },
		"done":       func(r *Record) { r.Streams[0].Done = false },
		"new stream": func(r *Record) { r.Streams = append(r.Streams, Stream{Entry: 1, After: extract.Key{&k1}}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Update moved a position (%s) without a panic", name)
				}
			}()
			jb.Update(fn)
		}()
	}

	tr := Transient(target, 1, 0, 1)
	tr.Update(func(r *Record) { r.Streams = []Stream{{Entry: 0}} })
	if err := tr.Advance(ctx, StreamAt{Entry: 0, Done: true}); err != nil || tr.Persistent() || !tr.Record().Streams[0].Done {
		t.Errorf("transient job: %v, %+v", err, tr.Record())
	}
}
