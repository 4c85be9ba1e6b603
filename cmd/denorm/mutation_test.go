package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// builderMutations are bugs put into migrate's document builder on
// purpose, one at a time: each is a one-line change to the source that
// changes documents without any error. Plain verify builds its expected
// documents with the same code, so it calls the result identical; the
// oracle (verify --oracle sql) must not.
var builderMutations = []struct {
	name, file, old, new string
}{
	{
		name: "char(n) keeps its padding",
		file: "extract/decode.go",
		old:  `return a.string(bytes.TrimRight(src, " ")), true`,
		new:  `return a.string(bytes.TrimRight(src, "")), true`,
	},
	{
		name: "real widened bit for bit",
		file: "extract/decode.go",
		old:  `a.float64(float32To64(math.Float32frombits(binary.BigEndian.Uint32(src))))`,
		new:  `a.float64(float64(math.Float32frombits(binary.BigEndian.Uint32(src))))`,
	},
	{
		name: "orderBy desc read ascending",
		file: "extract/stream.go",
		old:  `out = append(out, orderExpr(colRef(n.Columns[o.Col].Name), o.Desc))`,
		new:  `out = append(out, orderExpr(colRef(n.Columns[o.Col].Name), false))`,
	},
}

const mutationSchema = `
CREATE TABLE shop (id int PRIMARY KEY, code char(6) NOT NULL, rating real);
CREATE TABLE review (id int PRIMARY KEY, shop_id int NOT NULL REFERENCES shop, stars int, at date NOT NULL);
INSERT INTO shop VALUES (1, 'ab', 0.1), (2, 'xyz', 3.3);
INSERT INTO review VALUES (1, 1, 5, '2024-01-01'), (2, 1, 3, '2024-02-01'), (3, 1, 4, '2024-03-01'), (4, 2, 1, '2024-01-05');
`

const mutationMapping = `version: 1
numeric: double
collections:
  - name: shops
    table: shop
    fields:
      - code
      - rating
      - name: latestReviews
        embed:
          table: review
          join: {shop_id: id}
          orderBy: at desc
          limit: 2
          fields: [stars, at]
`

// TestOracleCatchesBuilderMutations builds denorm once per mutation from a
// copy of this source tree with that one line changed, migrates with it,
// and requires plain verify (built the same way) to call the target
// identical and verify --oracle sql to find the documents that differ:
// the proof does not share the builder's blind spots.
func TestOracleCatchesBuilderMutations(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	if testing.Short() {
		t.Skip("builds denorm once per mutation: not in the short suite")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the mutants: %v", err)
	}
	root := testenv.Root(t)
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, mutationSchema)
	mapping := writeMapping(t, mutationMapping)
	for _, m := range builderMutations {
		t.Run(m.name, func(t *testing.T) {
			tree := t.TempDir()
			copySource(t, root, tree)
			path := filepath.Join(tree, m.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(string(b), m.old) != 1 {
				t.Fatalf("%s: the line to mutate is not there once (the code changed: update the mutation):\n%s", m.file, m.old)
			}
			if err := os.WriteFile(path, []byte(strings.Replace(string(b), m.old, m.new, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(t.TempDir(), "denorm")
			build := exec.Command(goBin, "build", "-trimpath", "-o", bin, "./cmd/denorm")
			build.Dir = tree
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("build the mutant: %v\n%s", err, out)
			}
			target := t.TempDir()
			mutant := func(args ...string) (int, string) {
				cmd := exec.Command(bin, args...)
				out, err := cmd.CombinedOutput()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatalf("run the mutant: %v", err)
				}
				return code, string(out)
			}
			if code, out := mutant("migrate", "-q", "--mapping", mapping, "--source", src, "--target", target); code != 0 {
				t.Fatalf("mutant migrate: exit %d\n%s", code, out)
			}
			if code, out := mutant("verify", "--mapping", mapping, "--source", src, "--target", target); code != 0 || !strings.Contains(out, "result: identical") {
				t.Fatalf("plain verify was expected to share the mutant's blind spot: exit %d\n%s", code, out)
			}
			code, out := mutant("verify", "--oracle", "sql", "--mapping", mapping, "--source", src, "--target", target)
			if code != 1 || !strings.Contains(out, "different") {
				t.Fatalf("verify --oracle sql did not catch the mutation: exit %d\n%s", code, out)
			}
			t.Logf("caught:\n%s", out)
		})
	}
}

// copySource copies the module's Go sources (and files they embed) from
// root to dst, leaving out tests, test data and build output.
func copySource(t *testing.T, root, dst string) {
	t.Helper()
	skip := map[string]bool{".git": true, "bin": true, "dist": true, "man": true, "testdata": true, "bench": true, "tools": true, "docs": true, "deploy": true, "scripts": true}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if skip[rel] || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if strings.HasSuffix(p, "_test.go") || !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPlanSQL runs what plan --sql prints with psql, as a user would: every
// statement of every example runs, and gives the oracle's documents.
func TestPlanSQL(t *testing.T) {
	src := seedDB(t)
	psql := "psql"
	if dir := os.Getenv("DENORM_TEST_PG_BIN"); dir != "" {
		psql = filepath.Join(dir, "psql")
	}
	for _, name := range examples(t) {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "oracle.sql")
			code, out, errs := runCLI(t, "plan", "--sql", "--mapping", example(t, name), "--source", src, "--output", file)
			if code != 0 {
				t.Fatalf("plan --sql: exit %d\n%s%s", code, out, errs)
			}
			cmd := exec.Command(psql, "--no-psqlrc", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", src, "-f", file)
			got, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("psql -f (plan --sql): %v\n%s", err, got)
			}
			rows := strings.Count(strings.TrimSpace(string(got)), "\n") + 1
			b, _ := os.ReadFile(file)
			if stmts := strings.Count(string(b), ";\n"); stmts == 0 || rows < stmts {
				t.Fatalf("%d statements gave %d rows:\n%s", stmts, rows, got)
			}
			// Each row: the source row's name, then the document as the
			// array of its field values (the statement names them in
			// comments).
			if !strings.Contains(string(got), `)|[`) || !strings.Contains(string(b), "/* _id */") {
				t.Fatalf("no documents in the output:\n%s", got)
			}
		})
	}
}
