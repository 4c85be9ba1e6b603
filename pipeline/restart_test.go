package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

func openDir(t *testing.T, dir string) load.Target {
	t.Helper()
	tg, err := load.Open(context.Background(), dir, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tg.Close(context.Background()) })
	return tg
}

func mappingFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(p, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrepareJobRestartClears: a restart deletes the plan's collections'
// documents, unless the run is one partition of several.
func TestPrepareJobRestartClears(t *testing.T) {
	ctx := context.Background()
	plan := &mappings.Plan{Collections: []*mappings.CollectionPlan{{Name: "people"}}}
	mapping := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(mapping, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, parts := range []int{1, 2} {
		dir := t.TempDir()
		target, err := load.Open(ctx, dir, load.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := target.Prepare(ctx, load.Collections("people"), nil); err != nil {
			t.Fatal(err)
		}
		doc := transform.Document{Collection: "people", ID: int32(1), Body: transform.Doc{{Key: "_id", Value: int32(1)}}}
		if _, err := target.Write(ctx, "people", []transform.Document{doc}); err != nil {
			t.Fatal(err)
		}
		if _, err := target.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		job, err := PrepareJob(ctx, target, plan, job.Spec{Name: "j", Restart: true, Partitions: parts, Workers: 1, Mapping: mapping, Version: "1.0"}, nil)
		if err != nil || !job.Restarted {
			t.Fatalf("restart: %+v, %v", job, err)
		}
		if err := job.Lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := target.Close(ctx); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(dir, "people.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if cleared := st.Size() == 0; cleared != (parts == 1) {
			t.Errorf("%d partitions: people.jsonl has %d bytes after the restart", parts, st.Size())
		}
	}
}

// deleteRecorder is a directory target that records the selections a
// restart deletes and claims Caps.Delete, as a server does.
type deleteRecorder struct {
	load.Target
	deleted map[string][]load.Selection
}

func (d *deleteRecorder) Caps() load.Caps { return load.Caps{Delete: true} }

func (d *deleteRecorder) Delete(_ context.Context, coll string, sel load.Selection) (int64, error) {
	d.deleted[coll] = append(d.deleted[coll], sel)
	return 0, nil
}

// TestRestartSharedCollection: a restart deletes only the job's own
// document types from a collection several types share (another job may
// write the others), and whole other collections once each.
func TestRestartSharedCollection(t *testing.T) {
	ctx := context.Background()
	plan := &mappings.Plan{Collections: []*mappings.CollectionPlan{
		{Name: "catalog", Discriminator: "type", DiscriminatorValue: "book"},
		{Name: "people"},
		{Name: "catalog", Discriminator: "type", DiscriminatorValue: "review"},
		{Name: "people"},
	}}
	rec := &deleteRecorder{Target: openDir(t, t.TempDir()), deleted: map[string][]load.Selection{}}
	job, err := PrepareJob(ctx, rec, plan, job.Spec{Name: "j", Restart: true, Partitions: 1, Workers: 1, Mapping: mappingFile(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Lease.Release(ctx)
	want := map[string][]load.Selection{
		"catalog": {{Match: []transform.Field{{Key: "type", Value: "book"}}}, {Match: []transform.Field{{Key: "type", Value: "review"}}}},
		"people":  {{}},
	}
	if diff := cmp.Diff(want, rec.deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
}
