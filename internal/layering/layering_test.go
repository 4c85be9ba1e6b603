package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/denorm/denorm"

// layers ranks the module's top-level packages (and everything under
// them): a package imports only packages of lower layers, plus packages of
// its own directory tree. A package lives under the layer its imports put
// it in: transform/report (documents -> plan's figures) imports transform
// and mappings, so it is transform's, pure like it; mappings/advise
// imports only mappings.
var layers = map[string]int{
	"mappings":  0,
	"transform": 1,
	"oracle":    1,
	"extract":   2,
	"load":      2,
	"job":       3,
	"pipeline":  4,
	"cmd":       5,
}

// outside are top-level directories that belong to no layer. internal
// packages are helpers any layer may use, and import no layer themselves;
// bench is the benchmark program, which drives denorm as a user does.
var outside = map[string]bool{"internal": true, "bench": true}

// drivers are the database drivers and the only layer allowed to import
// each.
var drivers = []struct {
	prefix, owner, what string
}{
	{"github.com/jackc/pg", "extract", "the PostgreSQL driver"},
	{"go.mongodb.org/mongo-driver", "load", "the MongoDB driver"},
}

// exceptions are the imports of a driver outside its layer that are
// allowed, each with its reason. An exception no package needs any more
// is an error too, so this list only shrinks.
var exceptions = map[[2]string]string{
	{"oracle", "go.mongodb.org/mongo-driver/v2/bson"}:                    "verify's oracle encodes BSON with the driver's own encoder, not load's hand-written one: a second implementation",
	{"oracle", "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"}:        "verify's oracle appends BSON with the driver's bsoncore, not load's hand-written encoder: a second implementation",
	{"internal/testenv", "github.com/jackc/pgx/v5"}:                      "test helper: creates the test databases and loads fixtures",
	{"internal/testenv", "go.mongodb.org/mongo-driver/v2/bson"}:          "test helper: reads documents back from the test target",
	{"internal/testenv", "go.mongodb.org/mongo-driver/v2/mongo"}:         "test helper: reads documents back from the test target",
	{"internal/testenv", "go.mongodb.org/mongo-driver/v2/mongo/options"}: "test helper: reads documents back from the test target",
	{"internal/churn", "github.com/jackc/pgx/v5"}:                        "test helper: writes random rounds into the test source database",
	{"bench", "github.com/jackc/pgx/v5"}:                                 "benchmark: generates the data and runs the hand-written contenders",
	{"bench", "go.mongodb.org/mongo-driver/v2/bson"}:                     "benchmark: the hand-written contenders write with the driver",
	{"bench", "go.mongodb.org/mongo-driver/v2/mongo"}:                    "benchmark: the hand-written contenders write with the driver",
	{"bench", "go.mongodb.org/mongo-driver/v2/mongo/options"}:            "benchmark: the hand-written contenders write with the driver",
}

// noIO are the standard packages (with those under them) transform may not
// import: it is pure.
var noIO = []string{"os", "net", "database/sql", "syscall"}

type pkg struct {
	ImportPath string
	Imports    []string
}

// listPackages runs `go list -json ./...` at the module root: every
// package with its direct, non-test imports.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < len(layers) {
		t.Fatalf("go list found %d packages: not the module", len(pkgs))
	}
	return pkgs
}

// rel is a module package's path inside the module ("transform/report"),
// ok false for other packages.
func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	return strings.CutPrefix(path, module+"/")
}

func top(relPath string) string {
	first, _, _ := strings.Cut(relPath, "/")
	return first
}

// violations checks pkgs against the rules and returns every broken one,
// and the exceptions used.
func violations(pkgs []pkg) (bad []string, used map[[2]string]bool) {
	used = map[[2]string]bool{}
	for _, p := range pkgs {
		from, _ := rel(p.ImportPath)
		layer, inLayer := layers[top(from)]
		if !inLayer && !outside[top(from)] {
			bad = append(bad, fmt.Sprintf("%s belongs to no layer: add its directory to the layers in this test", from))
			continue
		}
		for _, imp := range p.Imports {
			if to, ok := rel(imp); ok {
				switch {
				case top(to) == top(from):
				case top(from) == "internal":
					bad = append(bad, fmt.Sprintf("%s imports %s: internal packages are helpers and import no layer", from, to))
				case top(to) == "internal" || top(from) == "bench":
				case layers[top(to)] >= layer:
					bad = append(bad, fmt.Sprintf("%s imports %s: imports go downwards only (cmd -> pipeline -> job -> extract/load -> transform -> mappings)", from, to))
				}
				continue
			}
			for _, d := range drivers {
				if !strings.HasPrefix(imp, d.prefix) || top(from) == d.owner {
					continue
				}
				if _, ok := exceptions[[2]string{from, imp}]; ok {
					used[[2]string{from, imp}] = true
					continue
				}
				bad = append(bad, fmt.Sprintf("%s imports %s: only %s imports %s", from, imp, d.owner, d.what))
			}
			if top(from) == "transform" || top(from) == "oracle" {
				for _, f := range noIO {
					if imp == f || strings.HasPrefix(imp, f+"/") {
						bad = append(bad, fmt.Sprintf("%s imports %s: %s is pure, it does no I/O", from, imp, top(from)))
					}
				}
			}
		}
	}
	return bad, used
}

// TestImportRules: the module's packages follow the import rules.
func TestImportRules(t *testing.T) {
	bad, used := violations(listPackages(t))
	for _, b := range bad {
		t.Error(b)
	}
	for e, why := range exceptions {
		if !used[e] {
			t.Errorf("exception %s -> %s (%s) is not needed any more: remove it", e[0], e[1], why)
		}
	}
}

// TestImportRulesCatchViolations feeds the checker imports that break each
// rule, so TestImportRules cannot pass by checking nothing.
func TestImportRulesCatchViolations(t *testing.T) {
	for _, c := range []struct {
		name string
		pkg  pkg
		want string
	}{
		{"pgx in pipeline", pkg{module + "/pipeline", []string{"github.com/jackc/pgx/v5/pgconn"}}, "only extract imports the PostgreSQL driver"},
		{"mongo in cmd", pkg{module + "/cmd/denorm", []string{"go.mongodb.org/mongo-driver/v2/mongo"}}, "only load imports the MongoDB driver"},
		{"pgx in load", pkg{module + "/load", []string{"github.com/jackc/pgx/v5"}}, "only extract imports the PostgreSQL driver"},
		{"mongo in extract", pkg{module + "/extract", []string{"go.mongodb.org/mongo-driver/v2/bson"}}, "only load imports the MongoDB driver"},
		{"transform does I/O", pkg{module + "/transform", []string{"net/http"}}, "transform is pure"},
		{"transform runs commands", pkg{module + "/transform", []string{"os/exec"}}, "transform is pure"},
		{"upwards", pkg{module + "/extract", []string{module + "/pipeline"}}, "imports go downwards only"},
		{"sideways", pkg{module + "/load", []string{module + "/extract"}}, "imports go downwards only"},
		{"transform uses extract", pkg{module + "/transform", []string{module + "/extract"}}, "imports go downwards only"},
		{"report uses load", pkg{module + "/transform/report", []string{module + "/load"}}, "imports go downwards only"},
		{"report opens files", pkg{module + "/transform/report", []string{"os"}}, "transform is pure"},
		{"mappings uses transform", pkg{module + "/mappings/advise", []string{module + "/transform"}}, "imports go downwards only"},
		{"internal uses a layer", pkg{module + "/internal/extsort", []string{module + "/mappings"}}, "internal packages are helpers"},
		{"new top-level package", pkg{module + "/sync", nil}, "belongs to no layer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad, _ := violations([]pkg{c.pkg})
			if len(bad) != 1 || !strings.Contains(bad[0], c.want) {
				t.Fatalf("got %q, want one violation saying %q", bad, c.want)
			}
		})
	}
	ok := []pkg{
		{module + "/cmd/denorm", []string{module + "/pipeline", module + "/extract", module + "/load", "fmt"}},
		{module + "/pipeline", []string{module + "/extract", module + "/internal/extsort", module + "/transform/report"}},
		{module + "/transform/report", []string{module + "/transform", module + "/mappings", "html/template", "io"}},
		{module + "/extract", []string{"github.com/jackc/pgx/v5", module + "/transform", module + "/mappings"}},
		{module + "/load", []string{"go.mongodb.org/mongo-driver/v2/mongo", module + "/transform"}},
		{module + "/transform", []string{module + "/mappings", "time", "strconv"}},
	}
	if bad, _ := violations(ok); len(bad) > 0 {
		t.Fatalf("allowed imports reported: %q", bad)
	}
}
