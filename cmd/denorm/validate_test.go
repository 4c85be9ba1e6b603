package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/internal/testenv"
)

// TestValidateLive runs `validate --source` on every mapping of
// testdata/invalid-live against seed.sql and compares everything it
// reports with the paired .errors file: every problem the live catalog
// reveals, each at file:line:col, with exit code 2. A case's .sql file,
// when there is one, adds to the seed what it needs (in a schema of its
// own). It connects as the least-privileged role SECURITY.md recommends
// (so it also shows that validate needs no more, and warns about
// nothing).
func TestValidateLive(t *testing.T) {
	db := seedDB(t)
	extra, err := filepath.Glob("testdata/invalid-live/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range extra {
		sql, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		testenv.Exec(t, db, string(sql))
	}
	src := testenv.ReaderRole(t, db, "", "reader-pw")
	files, err := filepath.Glob("testdata/invalid-live/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errs := runCLI(t, "validate", "--mapping", f, "--source", src)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitUsage, out, errs)
			}
			golden := strings.TrimSuffix(f, ".yaml") + ".errors"
			if *update {
				if err := os.WriteFile(golden, []byte(errs), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if d := cmp.Diff(string(want), errs); d != "" {
				t.Errorf("problems differ (-want +got):\n%s", d)
			}
		})
	}
	// Every example validates against the seed database.
	for _, name := range examples(t) {
		mapping := example(t, name)
		if code, out, errs := runCLI(t, "validate", "--mapping", mapping, "--source", src); code != 0 {
			t.Errorf("%s: exit %d\n%s%s", name, code, out, errs)
		}
	}
}
