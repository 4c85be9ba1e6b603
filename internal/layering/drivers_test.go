package layering

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

const module = "github.com/denorm/denorm"

// driverRules: the packages (by path in the module) allowed to import a
// driver. Tests are not checked: they may reach a server directly.
var driverRules = []struct {
	driver  string
	allowed []string
	why     string
}{
	{
		driver: "go.mongodb.org/mongo-driver",
		// internal/testenv gives tests their databases; bench measures
		// the plain driver as a baseline.
		allowed: []string{"load", "internal/testenv", "bench"},
		why:     "only load talks to the document store",
	},
}

// TestDriverImports fails when a package outside its driver's layer
// imports the driver (directly: the layers above import load, which
// imports it, and that is the point).
func TestDriverImports(t *testing.T) {
	root := testenv.Root(t)
	pkgs := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
			return filepath.SkipDir // another module (tools/testserver)
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		pkgs++
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		for _, imp := range p.Imports {
			for _, r := range driverRules {
				if strings.HasPrefix(imp, r.driver) && !slices.Contains(r.allowed, rel) {
					t.Errorf("%s/%s imports %s: %s (allowed in %s)", module, rel, imp, r.why, strings.Join(r.allowed, ", "))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pkgs < 10 {
		t.Fatalf("checked %d packages under %s: the walk missed the tree", pkgs, root)
	}
}
