package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// runCLI runs one denorm command line in-process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

var update = flag.Bool("update", false, "rewrite golden files")

// examples lists the example mappings that have expected documents.
func examples(t *testing.T) []string {
	root := testenv.Root(t)
	files, err := filepath.Glob(filepath.Join(root, "mappings", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if _, err := os.Stat(filepath.Join(root, "testdata", "examples", "expected", name)); err == nil {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatal("no example mapping with expected documents found")
	}
	return names
}

// TestExamplesGolden runs every example mapping on seed.sql through the
// directory target and through the MongoDB-wire server, and compares the
// documents with testdata/examples/expected/<example>/<collection>.jsonl.
func TestExamplesGolden(t *testing.T) {
	root := testenv.Root(t)
	src := seedDB(t)
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			mapping := example(t, name)
			expDir := filepath.Join(root, "testdata", "examples", "expected", name)
			want, _ := filepath.Glob(filepath.Join(expDir, "*.jsonl"))

			t.Run("directory", func(t *testing.T) {
				dir := t.TempDir()
				code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir)
				if code != 0 {
					t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
				}
				got, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
				if len(got) != len(want) {
					t.Errorf("wrote %d collections %v, want %d %v", len(got), got, len(want), want)
				}
				for _, w := range want {
					coll := filepath.Base(w)
					testenv.EqualDocs(t, coll, testenv.ReadLines(t, w), testenv.ReadLines(t, filepath.Join(dir, coll)))
				}
				oracleIdentical(t, mapping, src, dir)
			})
			t.Run("server", func(t *testing.T) {
				uri, db := testenv.MongoDB(t)
				for run := 1; run <= 2; run++ { // the second run must change nothing
					code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", uri)
					if code != 0 {
						t.Fatalf("migrate run %d exit %d\n%s%s", run, code, out, errs)
					}
					for _, w := range want {
						coll := strings.TrimSuffix(filepath.Base(w), ".jsonl")
						testenv.EqualDocs(t, coll, testenv.ReadLines(t, w), testenv.DumpCollection(t, db, coll))
					}
				}
				oracleIdentical(t, mapping, src, uri)
			})
		})
	}
}

// oracleIdentical requires verify --oracle sql to find the target identical
// to what the independent oracle builds from the source.
func oracleIdentical(t *testing.T, mapping, src, target string) {
	t.Helper()
	code, out, errs := runCLI(t, "verify", "--oracle", "sql", "--mapping", mapping, "--source", src, "--target", target)
	if code != 0 || !strings.Contains(out, "result: identical") {
		t.Errorf("verify --oracle sql: exit %d\n%s%s", code, out, errs)
	}
}
