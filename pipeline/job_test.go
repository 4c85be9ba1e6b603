package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// TestPrepareJob runs PrepareJob's decisions on a directory target (no
// database): each refusal is its typed error with the fields the command
// words its message from; a resume and a restart start from the right
// checkpoint.
func TestPrepareJob(t *testing.T) {
	ctx := context.Background()
	plan := &mappings.Plan{Collections: []*mappings.CollectionPlan{{Name: "people"}, {Name: "posts"}}}
	updated := time.Date(2026, 11, 23, 10, 30, 0, 0, time.UTC)

	type setup struct {
		// stored is the checkpoint the target holds (nil: none); corrupt
		// replaces it with half a file.
		stored  *load.Checkpoint
		corrupt bool
		// mapping is the mapping file's contents at PrepareJob.
		mapping string
	}
	const mappingText = "version: 1\n"
	hash := func(s string) string {
		dir := t.TempDir()
		p := filepath.Join(dir, "m.yaml")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := mappingHash(p)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	stored := func(phase string, workers int) *load.Checkpoint {
		return &load.Checkpoint{ID: "j", Format: load.CheckpointFormat, Job: "j", Partitions: 1, Workers: workers,
			MappingHash: hash(mappingText), Mapping: "m.yaml", Version: "0.9", Phase: phase, Collection: "posts",
			Started: updated.Add(-time.Hour), Updated: updated, Resumes: 2}
	}
	for _, c := range []struct {
		name  string
		setup setup
		spec  JobSpec
		// want is the error (compared by type and fields), or nil.
		want error
		// check looks at the job of a run that goes on.
		check func(t *testing.T, j *Job)
	}{
		{"fresh start", setup{mapping: mappingText}, JobSpec{Workers: 1}, nil, func(t *testing.T, j *Job) {
			c := j.Checkpoint
			if j.Resumed || j.Restarted || c.Phase != load.PhaseRunning || c.MappingHash != hash(mappingText) || c.Version != "1.0" || c.Workers != 1 || c.Resumes != 0 {
				t.Errorf("job %+v checkpoint %+v", j, c)
			}
		}},
		{"resume without checkpoint", setup{mapping: mappingText}, JobSpec{Resume: true, Workers: 1},
			&NoCheckpointError{ID: "j"}, nil},
		{"start over an unfinished job", setup{stored: stored(load.PhaseRunning, 1), mapping: mappingText}, JobSpec{Workers: 1},
			&JobUnfinishedError{ID: "j", Collection: "posts", Updated: updated}, nil},
		{"start over a finished job", setup{stored: stored(load.PhaseDone, 1), mapping: mappingText}, JobSpec{Workers: 1}, nil, func(t *testing.T, j *Job) {
			if j.Resumed || j.Checkpoint.Phase != load.PhaseRunning || j.Checkpoint.Resumes != 0 {
				t.Errorf("a finished job starts afresh: %+v", j.Checkpoint)
			}
		}},
		{"resume with a changed mapping", setup{stored: stored(load.PhaseRunning, 1), mapping: mappingText + "# changed\n"}, JobSpec{Resume: true, Workers: 1},
			&MappingChangedError{ID: "j", Then: hash(mappingText), Now: hash(mappingText + "# changed\n")}, nil},
		{"resume with other workers", setup{stored: stored(load.PhaseRunning, 2), mapping: mappingText}, JobSpec{Resume: true, Workers: 1},
			&WorkersChangedError{ID: "j", Then: 2, Now: 1}, nil},
		{"resume a finished job", setup{stored: stored(load.PhaseDone, 1), mapping: mappingText}, JobSpec{Resume: true, Workers: 1},
			&JobFinishedError{ID: "j", Finished: updated}, nil},
		{"resume", setup{stored: stored(load.PhaseRunning, 1), mapping: mappingText}, JobSpec{Resume: true, Workers: 1}, nil, func(t *testing.T, j *Job) {
			c := j.Checkpoint
			if !j.Resumed || j.ResumedVersion != "0.9" || c.Version != "1.0" || c.Resumes != 3 || c.Collection != "posts" || !c.Started.Equal(updated.Add(-time.Hour)) {
				t.Errorf("job %+v checkpoint %+v", j, c)
			}
		}},
		{"resume or start without checkpoint", setup{mapping: mappingText}, JobSpec{ResumeOrStart: true, Workers: 1}, nil, func(t *testing.T, j *Job) {
			if j.Resumed || j.Restarted || j.Checkpoint.Phase != load.PhaseRunning || j.Checkpoint.Resumes != 0 {
				t.Errorf("job %+v checkpoint %+v", j, j.Checkpoint)
			}
		}},
		{"resume or start", setup{stored: stored(load.PhaseRunning, 1), mapping: mappingText}, JobSpec{ResumeOrStart: true, Workers: 1}, nil, func(t *testing.T, j *Job) {
			if !j.Resumed || j.Checkpoint.Resumes != 3 || j.Checkpoint.Collection != "posts" {
				t.Errorf("job %+v checkpoint %+v", j, j.Checkpoint)
			}
		}},
		{"resume or start a finished job", setup{stored: stored(load.PhaseDone, 1), mapping: mappingText}, JobSpec{ResumeOrStart: true, Workers: 1},
			&JobFinishedError{ID: "j", Finished: updated}, nil},
		{"resume or start with a changed mapping", setup{stored: stored(load.PhaseRunning, 1), mapping: mappingText + "# changed\n"}, JobSpec{ResumeOrStart: true, Workers: 1},
			&MappingChangedError{ID: "j", Then: hash(mappingText), Now: hash(mappingText + "# changed\n")}, nil},
		{"resume a corrupt checkpoint", setup{stored: stored(load.PhaseRunning, 1), corrupt: true, mapping: mappingText}, JobSpec{Resume: true, Workers: 1},
			&load.CorruptCheckpointError{ID: "j"}, nil},
		{"restart a corrupt checkpoint", setup{stored: stored(load.PhaseRunning, 1), corrupt: true, mapping: mappingText}, JobSpec{Restart: true, Workers: 1}, nil, func(t *testing.T, j *Job) {
			if !j.Restarted || j.Checkpoint.Phase != load.PhaseRunning || j.Checkpoint.Resumes != 0 {
				t.Errorf("job %+v checkpoint %+v", j, j.Checkpoint)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			mapping := filepath.Join(t.TempDir(), "m.yaml")
			if err := os.WriteFile(mapping, []byte(c.setup.mapping), 0o644); err != nil {
				t.Fatal(err)
			}
			target, err := load.Open(ctx, dir, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer target.Close(ctx)
			if s := c.setup.stored; s != nil {
				if err := target.Checkpoints().Save(ctx, s); err != nil {
					t.Fatal(err)
				}
				if c.setup.corrupt {
					p := filepath.Join(dir, "_denorm", "j.json")
					b, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, b[:len(b)/2], 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			spec := c.spec
			spec.Name, spec.Partitions, spec.Mapping, spec.Version = "j", 1, mapping, "1.0"
			job, err := PrepareJob(ctx, target, plan, spec)
			if job != nil {
				defer job.Lease.Release(ctx)
			}
			if c.want == nil {
				if err != nil {
					t.Fatalf("PrepareJob: %v", err)
				}
				if job.ID != "j" || job.Store == nil {
					t.Fatalf("job %+v", job)
				}
				c.check(t, job)
				return
			}
			if err == nil {
				t.Fatalf("PrepareJob went on (%+v), want %T", job, c.want)
			}
			// Where names the store; a corrupt checkpoint's Reason is
			// the parser's: both are compared by presence only.
			opts := cmp.Options{
				cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Where" || p.Last().String() == ".Reason" }, cmp.Ignore()),
			}
			got := reflect.New(reflect.TypeOf(c.want)) // a **XError for errors.As
			if !errors.As(err, got.Interface()) {
				t.Fatalf("PrepareJob: %v (%T), want a %T", err, err, c.want)
			}
			if diff := cmp.Diff(c.want, got.Elem().Interface(), opts); diff != "" {
				t.Errorf("%T (-want +got):\n%s", c.want, diff)
			}
		})
	}
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
		job, err := PrepareJob(ctx, target, plan, JobSpec{Name: "j", Restart: true, Partitions: parts, Workers: 1, Mapping: mapping, Version: "1.0"})
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
