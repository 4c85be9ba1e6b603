package job

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/denorm/denorm/mappings"
)

// TestSyncRemap: what a sync run's mapping means for a job's record: the
// same file or the same fingerprints change nothing; other fingerprints
// give the collections to rebuild, with those an interrupted rebuild left
// rebuilt whole again; a record without fingerprints refuses a changed
// file (and takes the run's when the file is the same); a change during
// an unfinished initial copy is refused.
func TestSyncRemap(t *testing.T) {
	prints := func(docs ...string) []mappings.CollectionPrint {
		var out []mappings.CollectionPrint
		for i, d := range docs {
			out = append(out, mappings.CollectionPrint{Name: []string{"a", "b", "c"}[i], Entries: []mappings.EntryPrint{{Docs: d}}})
		}
		return out
	}
	rec := func(hash string, p []mappings.CollectionPrint) *Record {
		return &Record{ID: "j", MappingHash: hash, Prints: p, Phase: PhaseDone}
	}
	type want struct {
		rebuild []string
		refused string
	}
	cases := []struct {
		name string
		rec  *Record
		run  runMapping
		want want
	}{
		{"same file", rec("h1", prints("1", "2")), runMapping{hash: "h1", prints: prints("1", "2")}, want{}},
		{"layout only", rec("h1", prints("1", "2")), runMapping{hash: "h2", prints: prints("1", "2")}, want{}},
		{"one collection", rec("h1", prints("1", "2")), runMapping{hash: "h2", prints: prints("1", "3")}, want{rebuild: []string{"b"}}},
		{"interrupted rebuild, changed back", &Record{ID: "j", MappingHash: "h1", Prints: prints("1", "2"), Phase: PhaseDone, Rebuilding: []string{"a"}},
			runMapping{hash: "h1", prints: prints("1", "2")}, want{rebuild: []string{"a"}}},
		{"no prints, same file", rec("h1", nil), runMapping{hash: "h1", prints: prints("1")}, want{}},
		{"no prints, changed file", rec("h1", nil), runMapping{hash: "h2", prints: prints("1")}, want{refused: "older denorm"}},
		{"unfinished copy", &Record{ID: "j", MappingHash: "h1", Prints: prints("1", "2"), Phase: PhaseRunning, Streams: []Stream{{Collection: "a"}}},
			runMapping{hash: "h2", prints: prints("1", "3")}, want{refused: "initial copy is unfinished"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := syncRemap(tc.rec, tc.run)
			var changed *MappingChangedError
			switch {
			case tc.want.refused != "":
				if !errors.As(err, &changed) || !strings.Contains(err.Error(), tc.want.refused) {
					t.Errorf("= %v, %v; want refused: %s", r, err, tc.want.refused)
				}
				return
			case err != nil:
				t.Fatal(err)
			case tc.want.rebuild == nil && r != nil:
				t.Errorf("= %+v, want no change", r)
			case tc.want.rebuild != nil && (r == nil || !slices.Equal(r.Collections(), tc.want.rebuild)):
				t.Errorf("= %+v, want %v rebuilt", r, tc.want.rebuild)
			}
			if r != nil && len(tc.rec.Rebuilding) > 0 && r.Rebuild[0].Types != nil {
				t.Errorf("an interrupted rebuild is redone for types %v, want whole", r.Rebuild[0].Types)
			}
		})
	}
}
