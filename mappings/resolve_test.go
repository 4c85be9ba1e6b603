package mappings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// The resolve corpus: testdata/resolve/*.txtar, one case per file, run
// without a database. A case's comment may hold directives, one a line:
//
//	example: NAME.yaml   the mapping is examples/NAME.yaml (else the
//	                     archive's mapping.yaml)
//	seed: examples|pagila catalog.json is the live catalog of that
//	                     database for the mapping's tables (kept so by
//	                     extract's TestResolveCatalogSnapshots)
//
// Its files: mapping.yaml (unless example:), catalog.json (a Catalog as
// JSON), and the expected results: plan (dumpPlan of what ResolveAll
// returned, when it holds an entry) and errors (every problem, one
// file:line:col: message a line, when there are any). go test -update
// rewrites the expected results.

const corpusDir = "testdata/resolve"

// resolveCase is one parsed case file.
type resolveCase struct {
	file    string
	ar      *txtar.Archive
	example string // examples/ file name, if the mapping is an example
	seed    string
	// mappingPath and mapping are what Parse reads.
	mappingPath string
	mapping     []byte
	catalog     *Catalog
}

func loadCase(path string) (*resolveCase, error) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		return nil, err
	}
	c := &resolveCase{file: path, ar: ar}
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		if v, ok := strings.CutPrefix(line, "example: "); ok {
			c.example = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "seed: "); ok {
			c.seed = strings.TrimSpace(v)
		}
	}
	if c.example != "" {
		c.mappingPath = "examples/" + c.example
		if c.mapping, err = os.ReadFile(c.mappingPath); err != nil {
			return nil, err
		}
	} else {
		c.mappingPath = "mapping.yaml"
		if c.mapping = section(ar, "mapping.yaml"); c.mapping == nil {
			return nil, fmt.Errorf("%s: no mapping.yaml and no example: directive", path)
		}
	}
	raw := section(ar, "catalog.json")
	if raw == nil {
		return nil, fmt.Errorf("%s: no catalog.json", path)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.catalog); err != nil {
		return nil, fmt.Errorf("%s: catalog.json: %w", path, err)
	}
	return c, nil
}

// section is the content of the archive's file name, nil when absent.
func section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// results resolves the case and returns the expected-result files it
// should hold, in archive order.
func (c *resolveCase) results() ([]txtar.File, error) {
	f, err := Parse(c.mappingPath, c.mapping)
	if err != nil {
		return nil, fmt.Errorf("the mapping does not parse (the corpus is for Resolve; bad files go to testdata/invalid): %w", err)
	}
	plan, ps := ResolveAll(f, c.catalog)
	// The same input gives the same plan: nothing may hang on map order.
	for range 8 {
		again, aps := ResolveAll(f, c.catalog)
		if dumpPlan(again) != dumpPlan(plan) || aps.Error() != ps.Error() {
			return nil, fmt.Errorf("ResolveAll gave another result on another run:\n%s%s\nthen:\n%s%s", dumpPlan(plan), ps.Error(), dumpPlan(again), aps.Error())
		}
	}
	var out []txtar.File
	if len(plan.Collections) > 0 {
		out = append(out, txtar.File{Name: "plan", Data: []byte(dumpPlan(plan))})
	}
	if len(ps) > 0 {
		out = append(out, txtar.File{Name: "errors", Data: []byte(ps.Error() + "\n")})
	}
	// Resolve is ResolveAll with all or nothing.
	full, err := Resolve(f, c.catalog)
	switch {
	case len(ps) > 0 && (err == nil || full != nil || err.Error() != ps.Error()):
		return nil, fmt.Errorf("Resolve = %v, %v; want nil and the problems of ResolveAll", full, err)
	case len(ps) == 0 && (err != nil || dumpPlan(full) != dumpPlan(plan)):
		return nil, fmt.Errorf("Resolve = %v; want the plan of ResolveAll", err)
	}
	return out, nil
}

var resultNames = []string{"plan", "errors"}

// mismatches compares the expected results the case holds with got.
func (c *resolveCase) mismatches(got []txtar.File) []string {
	var out []string
	for _, name := range resultNames {
		want := section(c.ar, name)
		var have []byte
		for _, g := range got {
			if g.Name == name {
				have = g.Data
			}
		}
		switch {
		case want == nil && have == nil:
		case want == nil:
			out = append(out, fmt.Sprintf("unexpected %s:\n%s", name, have))
		case have == nil:
			out = append(out, fmt.Sprintf("expected %s, got none; want:\n%s", name, want))
		default:
			if d := cmp.Diff(string(want), string(have)); d != "" {
				out = append(out, fmt.Sprintf("%s differs (-want +got):\n%s", name, d))
			}
		}
	}
	return out
}

// update replaces the case's expected results by got.
func (c *resolveCase) update(got []txtar.File) error {
	files := slices.DeleteFunc(slices.Clone(c.ar.Files), func(f txtar.File) bool {
		return slices.Contains(resultNames, f.Name)
	})
	ar := &txtar.Archive{Comment: c.ar.Comment, Files: append(files, got...)}
	return os.WriteFile(c.file, txtar.Format(ar), 0o644)
}

func corpusFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no resolve cases in %s: %v", corpusDir, err)
	}
	return files
}

// TestResolveCorpus resolves every case of testdata/resolve and compares
// the plan and the problems with the expected ones, exactly.
func TestResolveCorpus(t *testing.T) {
	for _, file := range corpusFiles(t) {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			c, err := loadCase(file)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.results()
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := c.update(got); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, m := range c.mismatches(got) {
				t.Error(m)
			}
		})
	}
}

// TestResolveCorpusCoversExamples: every shipped example has a case, so a
// new example cannot skip the resolver's corpus.
func TestResolveCorpusCoversExamples(t *testing.T) {
	covered := map[string]bool{}
	for _, file := range corpusFiles(t) {
		c, err := loadCase(file)
		if err != nil {
			t.Fatal(err)
		}
		covered[c.example] = true
	}
	examples, _ := filepath.Glob("examples/*.yaml")
	for _, e := range examples {
		if !covered[filepath.Base(e)] {
			t.Errorf("%s has no case in %s (add one with the line `example: %s`)", e, corpusDir, filepath.Base(e))
		}
	}
}

// TestResolveCorpusFailsOnWrongExpectations changes the expectations of
// a plan case and of an errors case and checks the comparison notices
// each change: a corpus that cannot fail would prove nothing.
func TestResolveCorpusFailsOnWrongExpectations(t *testing.T) {
	check := func(file string, edit func(ar *txtar.Archive)) {
		t.Helper()
		c, err := loadCase(filepath.Join(corpusDir, file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.results()
		if err != nil {
			t.Fatal(err)
		}
		if m := c.mismatches(got); len(m) > 0 {
			t.Fatalf("%s does not match before the edit: %v", file, m)
		}
		edit(c.ar)
		if m := c.mismatches(got); len(m) == 0 {
			t.Errorf("%s: a wrong expectation passed", file)
		}
	}
	editSection := func(name string, fn func([]byte) []byte) func(*txtar.Archive) {
		return func(ar *txtar.Archive) {
			for i := range ar.Files {
				if ar.Files[i].Name == name {
					ar.Files[i].Data = fn(slices.Clone(ar.Files[i].Data))
					return
				}
			}
			t.Fatalf("no %s to edit", name)
		}
	}
	// One character of the plan: a column's type.
	check("person.txtar", editSection("plan", func(b []byte) []byte {
		return bytes.Replace(b, []byte("integer"), []byte("bigint"), 1)
	}))
	// A problem's column number.
	check("errors-columns.txtar", editSection("errors", func(b []byte) []byte {
		i := bytes.IndexByte(b, ':')
		j := bytes.IndexByte(b[i+1:], ':') + i + 1
		return append(append(b[:j+1:j+1], '9'), b[j+1:]...)
	}))
	// A problem left out.
	check("errors-columns.txtar", editSection("errors", func(b []byte) []byte {
		return b[bytes.IndexByte(b, '\n')+1:]
	}))
	// Errors expected where the mapping resolves.
	check("person.txtar", func(ar *txtar.Archive) {
		ar.Files = append(ar.Files, txtar.File{Name: "errors", Data: []byte("mapping.yaml:1:1: no such problem\n")})
	})
	// A plan expected where nothing resolves.
	check("errors-tables.txtar", func(ar *txtar.Archive) {
		ar.Files = append(ar.Files, txtar.File{Name: "plan", Data: []byte("collection x\n")})
	})
}
