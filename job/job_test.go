package job

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
)

// TestPrepareJob runs Prepare's decisions on a directory target (no
// database): each refusal is its typed error with the fields the command
// words its message from; a resume and a restart start from the right
// checkpoint.
func TestPrepare(t *testing.T) {
	ctx := context.Background()
	updated := time.Date(2026, 11, 23, 10, 30, 0, 0, time.UTC)

	type setup struct {
		// stored is the checkpoint the target holds (nil: none); corrupt
		// replaces it with half a file.
		stored  *Record
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
	stored := func(phase string, workers int) *Record {
		return &Record{ID: "j", Format: Format, Job: "j", Partitions: 1, Workers: workers,
			MappingHash: hash(mappingText), Mapping: "m.yaml", Version: "0.9", Phase: phase, Collection: "posts",
			Started: updated.Add(-time.Hour), Updated: updated, Resumes: 2}
	}
	for _, c := range []struct {
		name  string
		setup setup
		spec  Spec
		// want is the error (compared by type and fields), or nil.
		want error
		// check looks at the job of a run that goes on.
		check func(t *testing.T, j *Job)
	}{
		{"fresh start", setup{mapping: mappingText}, Spec{Workers: 1}, nil, func(t *testing.T, j *Job) {
			c := j.Record()
			if j.Resumed || j.Restarted || c.Phase != PhaseRunning || c.MappingHash != hash(mappingText) || c.Version != "1.0" || c.Workers != 1 || c.Resumes != 0 {
				t.Errorf("job %+v checkpoint %+v", j, c)
			}
		}},
		{"resume without checkpoint", setup{mapping: mappingText}, Spec{Resume: true, Workers: 1},
			&NoCheckpointError{ID: "j"}, nil},
		{"start over an unfinished job", setup{stored: stored(PhaseRunning, 1), mapping: mappingText}, Spec{Workers: 1},
			&UnfinishedError{ID: "j", Collection: "posts", Updated: updated}, nil},
		{"start over a finished job", setup{stored: stored(PhaseDone, 1), mapping: mappingText}, Spec{Workers: 1}, nil, func(t *testing.T, j *Job) {
			if j.Resumed || j.Record().Phase != PhaseRunning || j.Record().Resumes != 0 {
				t.Errorf("a finished job starts afresh: %+v", j.Record())
			}
		}},
		{"resume with a changed mapping", setup{stored: stored(PhaseRunning, 1), mapping: mappingText + "# changed\n"}, Spec{Resume: true, Workers: 1},
			&MappingChangedError{ID: "j", Then: hash(mappingText), Now: hash(mappingText + "# changed\n")}, nil},
		{"resume with other workers", setup{stored: stored(PhaseRunning, 2), mapping: mappingText}, Spec{Resume: true, Workers: 1},
			&WorkersChangedError{ID: "j", Then: 2, Now: 1}, nil},
		{"resume a finished job", setup{stored: stored(PhaseDone, 1), mapping: mappingText}, Spec{Resume: true, Workers: 1},
			&FinishedError{ID: "j", Finished: updated}, nil},
		{"resume", setup{stored: stored(PhaseRunning, 1), mapping: mappingText}, Spec{Resume: true, Workers: 1}, nil, func(t *testing.T, j *Job) {
			c := j.Record()
			if !j.Resumed || j.ResumedVersion != "0.9" || c.Version != "1.0" || c.Resumes != 3 || c.Collection != "posts" || !c.Started.Equal(updated.Add(-time.Hour)) {
				t.Errorf("job %+v checkpoint %+v", j, c)
			}
		}},
		{"resume or start without checkpoint", setup{mapping: mappingText}, Spec{ResumeOrStart: true, Workers: 1}, nil, func(t *testing.T, j *Job) {
			if j.Resumed || j.Restarted || j.Record().Phase != PhaseRunning || j.Record().Resumes != 0 {
				t.Errorf("job %+v checkpoint %+v", j, j.Record())
			}
		}},
		{"resume or start", setup{stored: stored(PhaseRunning, 1), mapping: mappingText}, Spec{ResumeOrStart: true, Workers: 1}, nil, func(t *testing.T, j *Job) {
			if !j.Resumed || j.Record().Resumes != 3 || j.Record().Collection != "posts" {
				t.Errorf("job %+v checkpoint %+v", j, j.Record())
			}
		}},
		{"resume or start a finished job", setup{stored: stored(PhaseDone, 1), mapping: mappingText}, Spec{ResumeOrStart: true, Workers: 1},
			&FinishedError{ID: "j", Finished: updated}, nil},
		{"resume or start with a changed mapping", setup{stored: stored(PhaseRunning, 1), mapping: mappingText + "# changed\n"}, Spec{ResumeOrStart: true, Workers: 1},
			&MappingChangedError{ID: "j", Then: hash(mappingText), Now: hash(mappingText + "# changed\n")}, nil},
		{"resume a corrupt checkpoint", setup{stored: stored(PhaseRunning, 1), corrupt: true, mapping: mappingText}, Spec{Resume: true, Workers: 1},
			&CorruptError{ID: "j"}, nil},
		{"restart a corrupt checkpoint", setup{stored: stored(PhaseRunning, 1), corrupt: true, mapping: mappingText}, Spec{Restart: true, Workers: 1}, nil, func(t *testing.T, j *Job) {
			if !j.Restarted || j.Record().Phase != PhaseRunning || j.Record().Resumes != 0 {
				t.Errorf("job %+v checkpoint %+v", j, j.Record())
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
				saveRecord(t, target, s)
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
			jb, err := Prepare(ctx, target, spec)
			if jb != nil {
				defer jb.Lease.Release(ctx)
			}
			if c.want == nil {
				if err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				if jb.ID != "j" || !jb.Persistent() {
					t.Fatalf("job %+v", jb)
				}
				c.check(t, jb)
				return
			}
			if err == nil {
				t.Fatalf("Prepare went on (%+v), want %T", jb, c.want)
			}
			// Where names the store; a corrupt checkpoint's Reason is
			// the parser's: both are compared by presence only.
			opts := cmp.Options{
				cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Where" || p.Last().String() == ".Reason" }, cmp.Ignore()),
			}
			got := reflect.New(reflect.TypeOf(c.want)) // a **XError for errors.As
			if !errors.As(err, got.Interface()) {
				t.Fatalf("Prepare: %v (%T), want a %T", err, err, c.want)
			}
			if diff := cmp.Diff(c.want, got.Elem().Interface(), opts); diff != "" {
				t.Errorf("%T (-want +got):\n%s", c.want, diff)
			}
		})
	}
}

// saveRecord stores r in target's record store as a job would.
func saveRecord(t *testing.T, target load.Target, r *Record) {
	t.Helper()
	lr, err := r.encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Records().Save(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
}
