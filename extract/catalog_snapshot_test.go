package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"golang.org/x/tools/txtar"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
)

var updateCatalogs = flag.Bool("update-catalogs", false, "rewrite the catalog.json of the mappings/testdata/resolve cases that name a seed")

// seeds are the databases a resolve case's catalog may come from.
var seeds = map[string][]string{
	"examples": {"testdata", "examples", "seed.sql"},
	"pagila":   {"testdata", "pagila", "pagila-schema.sql"},
}

// TestResolveCatalogSnapshots keeps the catalogs of the resolver's corpus
// (mappings/testdata/resolve) true: every case marked `seed: NAME` holds
// exactly what ReadCatalog says about its mapping's tables in that
// database (row estimates left out). With -update-catalogs it writes them,
// which is how a new case gets its catalog.
func TestResolveCatalogSnapshots(t *testing.T) {
	root := testenv.Root(t)
	dir := filepath.Join(root, "mappings", "testdata", "resolve")
	files, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no resolve cases in %s: %v", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conns := map[string]*pgx.Conn{}
	checked := 0
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			t.Fatal(err)
		}
		seed, mappingPath, mapping := "", "mapping.yaml", []byte(nil)
		for _, line := range strings.Split(string(ar.Comment), "\n") {
			if v, ok := strings.CutPrefix(line, "seed: "); ok {
				seed = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "example: "); ok {
				mappingPath = filepath.Join(root, "mappings", "examples", strings.TrimSpace(v))
				if mapping, err = os.ReadFile(mappingPath); err != nil {
					t.Fatal(err)
				}
			}
		}
		if seed == "" {
			continue // a catalog written by hand
		}
		idx := -1
		for i, f := range ar.Files {
			if f.Name == "mapping.yaml" && mapping == nil {
				mapping = f.Data
			}
			if f.Name == "catalog.json" {
				idx = i
			}
		}
		f, err := mappings.Parse(mappingPath, mapping)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		conn := conns[seed]
		if conn == nil {
			sql, ok := seeds[seed]
			if !ok {
				t.Fatalf("%s: unknown seed %q", file, seed)
			}
			db := testenv.PostgresDB(t, filepath.Join(append([]string{root}, sql...)...))
			if conn, err = pgx.Connect(ctx, db); err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			conns[seed] = conn
		}
		cat, err := ReadCatalog(ctx, conn, f.Tables())
		if err != nil {
			t.Fatal(err)
		}
		got, err := catalogSnapshot(cat)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if *updateCatalogs {
			if idx < 0 {
				ar.Files = append(ar.Files, txtar.File{Name: "catalog.json"})
				idx = len(ar.Files) - 1
			}
			ar.Files[idx].Data = got
			if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if idx < 0 {
			t.Errorf("%s: no catalog.json (run with -update-catalogs to write it)", file)
			continue
		}
		if d := cmp.Diff(string(ar.Files[idx].Data), string(got)); d != "" {
			t.Errorf("%s: catalog.json is not the live catalog of seed %s (-stored +live; -update-catalogs rewrites it):\n%s", file, seed, d)
		}
	}
	if checked == 0 {
		t.Fatal("no case names a seed: nothing was checked")
	}
}

// catalogSnapshot is cat as the corpus stores it: indented JSON with each
// innermost object or list on one line (a column, a key), without row
// estimates, which change with the data.
func catalogSnapshot(cat *mappings.Catalog) ([]byte, error) {
	for _, t := range cat.Tables {
		t.Estimate = 0
	}
	raw, err := json.MarshalIndent(cat, "", "  ")
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		open := strings.HasSuffix(line, "{") || strings.HasSuffix(line, "[")
		if !open {
			out.WriteString(line + "\n")
			continue
		}
		// Join the block when nothing inside it opens another.
		j, flat := i+1, true
		for ; j < len(lines); j++ {
			s := strings.TrimSpace(lines[j])
			if strings.HasPrefix(s, "}") || strings.HasPrefix(s, "]") {
				break
			}
			if strings.HasSuffix(s, "{") || strings.HasSuffix(s, "[") {
				flat = false
				break
			}
		}
		if !flat || j == len(lines) {
			out.WriteString(line + "\n")
			continue
		}
		var b strings.Builder
		b.WriteString(line)
		for k := i + 1; k < j; k++ {
			s := strings.TrimSpace(lines[k])
			if k > i+1 {
				b.WriteByte(' ')
			}
			b.WriteString(s)
		}
		b.WriteString(strings.TrimSpace(lines[j]))
		out.WriteString(b.String() + "\n")
		i = j
	}
	return out.Bytes(), nil
}
