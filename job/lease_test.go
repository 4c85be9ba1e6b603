package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/denorm/denorm/load"
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

// TestPrepareHeld: a job another run holds is refused, for a start, a
// resume and a restart alike, naming the holder; once released, it runs.
// A whole job's restart is refused while one of its partitions runs.
func TestPrepareHeld(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spec := Spec{Name: "j", Partitions: 1, Workers: 1, Mapping: mappingFile(t), Version: "1.0"}
	first, err := Prepare(ctx, openDir(t, dir), spec)
	if err != nil {
		t.Fatal(err)
	}
	if h := first.Lease.Holder(); h.PID != os.Getpid() || h.Command != "migrate" {
		t.Errorf("holder %+v", h)
	}
	for _, s := range []Spec{spec, {Name: "j", Partitions: 1, Workers: 1, Mapping: spec.Mapping, Restart: true},
		{Name: "j", Partitions: 1, Workers: 1, Mapping: spec.Mapping, ResumeOrStart: true}} {
		_, err := Prepare(ctx, openDir(t, dir), s)
		var held *load.LeaseHeldError
		if !errors.As(err, &held) || held.ID != "j" || held.Holder.PID != os.Getpid() {
			t.Fatalf("Prepare of a held job (%+v) = %v, want a LeaseHeldError", s, err)
		}
	}
	if err := first.Lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := Prepare(ctx, openDir(t, dir), spec)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	defer second.Lease.Release(ctx)

	part := spec
	part.Name, part.Partition, part.Partitions = "p", 1, 3
	running, err := Prepare(ctx, openDir(t, dir), part)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Lease.Release(ctx)
	whole := spec
	whole.Name, whole.Restart = "p", true
	_, err = Prepare(ctx, openDir(t, dir), whole)
	var held *load.LeaseHeldError
	if !errors.As(err, &held) || held.ID != "p.1of3" {
		t.Fatalf("restarting job p while partition 1/3 runs = %v, want a LeaseHeldError for p.1of3", err)
	}
}

// TestLeaseLost: a lease lost at a heartbeat (here: its lock file
// removed, so another process could lock a new one) ends the lease's
// Context with the *load.LeaseLostError as cause, and the guarded store
// no longer saves or deletes checkpoints.
func TestLeaseLost(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openDir(t, dir).Records()
	h, err := HoldLease(ctx, store, "j", LeaseOptions{TTL: 40 * time.Millisecond, Command: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release(ctx)
	guarded := h.Guard(store)
	cp, err := (&Record{ID: "j", Format: Format, Job: "j", Partitions: 1, Workers: 1, MappingHash: "x", Phase: PhaseRunning}).encode()
	if err != nil {
		t.Fatal(err)
	}
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
