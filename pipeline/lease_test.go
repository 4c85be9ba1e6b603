package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// TestPrepareJobHeld: a job another run holds is refused, for a start, a
// resume and a restart alike, naming the holder; once released, it runs.
// A whole job's restart is refused while one of its partitions runs.
func TestPrepareJobHeld(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	plan := &mappings.Plan{Collections: []*mappings.CollectionPlan{{Name: "people"}}}
	spec := JobSpec{Name: "j", Partitions: 1, Workers: 1, Mapping: mappingFile(t), Version: "1.0"}
	first, err := PrepareJob(ctx, openDir(t, dir), plan, spec)
	if err != nil {
		t.Fatal(err)
	}
	if h := first.Lease.Holder(); h.PID != os.Getpid() || h.Command != "migrate" {
		t.Errorf("holder %+v", h)
	}
	for _, s := range []JobSpec{spec, {Name: "j", Partitions: 1, Workers: 1, Mapping: spec.Mapping, Restart: true},
		{Name: "j", Partitions: 1, Workers: 1, Mapping: spec.Mapping, ResumeOrStart: true}} {
		_, err := PrepareJob(ctx, openDir(t, dir), plan, s)
		var held *load.LeaseHeldError
		if !errors.As(err, &held) || held.ID != "j" || held.Holder.PID != os.Getpid() {
			t.Fatalf("PrepareJob of a held job (%+v) = %v, want a LeaseHeldError", s, err)
		}
	}
	if err := first.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := PrepareJob(ctx, openDir(t, dir), plan, spec)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	defer second.Lease.Release(ctx)

	part := spec
	part.Name, part.Partition, part.Partitions = "p", 1, 3
	running, err := PrepareJob(ctx, openDir(t, dir), plan, part)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Lease.Release(ctx)
	whole := spec
	whole.Name, whole.Restart = "p", true
	_, err = PrepareJob(ctx, openDir(t, dir), plan, whole)
	var held *load.LeaseHeldError
	if !errors.As(err, &held) || held.ID != "p.1of3" {
		t.Fatalf("restarting job p while partition 1/3 runs = %v, want a LeaseHeldError for p.1of3", err)
	}
}

// TestHeldLeaseLost: a lease lost at a heartbeat (here: its lock file
// removed, so another process could lock a new one) ends the lease's
// Context with the *load.LeaseLostError as cause, and the guarded store
// no longer saves or deletes checkpoints.
func TestHeldLeaseLost(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openDir(t, dir).Checkpoints()
	h, err := HoldLease(ctx, store, "j", LeaseOptions{TTL: 40 * time.Millisecond, Command: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	guarded := h.Guard(store)
	cp := &load.Checkpoint{ID: "j", Format: load.CheckpointFormat, Job: "j", Partitions: 1, Workers: 1, MappingHash: "x", Phase: load.PhaseRunning}
	if err := guarded.Save(ctx, cp); err != nil {
		t.Fatalf("Save under a held lease: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "_denorm", "j.lock")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lease's context did not end")
	}
	var lost *load.LeaseLostError
	if !errors.As(context.Cause(h.Context()), &lost) || !errors.As(h.Err(), &lost) || !errors.As(h.Check(ctx), &lost) {
		t.Fatalf("cause %v, Err %v; want the LeaseLostError", context.Cause(h.Context()), h.Err())
	}
	if err := guarded.Save(ctx, cp); !errors.As(err, &lost) {
		t.Errorf("Save after the loss = %v", err)
	}
	if err := guarded.Delete(ctx, "j"); !errors.As(err, &lost) {
		t.Errorf("Delete after the loss = %v", err)
	}
	if c, err := store.Load(ctx, "j"); err != nil || c == nil {
		t.Errorf("the checkpoint saved before the loss: %v, %v", c, err)
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
	job, err := PrepareJob(ctx, rec, plan, JobSpec{Name: "j", Restart: true, Partitions: 1, Workers: 1, Mapping: mappingFile(t)})
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
