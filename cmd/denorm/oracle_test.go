package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// TestVerifyOracle: verify --oracle sql finds a target written by migrate
// identical, lists the fields it does not check independently (on stdout
// and in the report), finds a changed document, and --sample-roots N
// compares N documents of each collection, which still catch a document
// that was deleted when it is among them.
func TestVerifyOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := personsDB(t, 500)
	testenv.Exec(t, src, "UPDATE person SET last_name = 'O''Brien \"Quote\" é' WHERE id = 1")
	hybridSrc := seedDB(t)
	t.Run("identical and unchecked fields", func(t *testing.T) {
		dir := t.TempDir()
		mapping := example(t, "hybrid")
		if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", hybridSrc, "--target", dir); code != 0 {
			t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
		}
		rep := filepath.Join(t.TempDir(), "report.json")
		code, out, errs := runCLI(t, "verify", "--oracle", "sql", "--mapping", mapping, "--source", hybridSrc, "--target", dir, "--report", rep)
		if code != 0 || !strings.Contains(out, "result: identical") || !strings.Contains(out, "books.authors.name: expr:") {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		var r struct {
			Identical bool `json:"identical"`
			Oracle    struct {
				Unchecked []struct{ Path, Why string } `json:"uncheckedFields"`
			} `json:"oracle"`
		}
		b, _ := os.ReadFile(rep)
		if err := json.Unmarshal(b, &r); err != nil || !r.Identical || len(r.Oracle.Unchecked) == 0 || r.Oracle.Unchecked[0].Path != "books.authors.name" {
			t.Fatalf("report: %v %+v\n%s", err, r, b)
		}
	})
	mapping := example(t, "person")
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	path := filepath.Join(dir, "people.jsonl")
	lines := testenv.ReadLines(t, path)
	t.Run("a changed document", func(t *testing.T) {
		changed := append([]string(nil), lines...)
		for i, l := range changed {
			if strings.HasPrefix(l, `{"_id":1002,`) {
				changed[i] = strings.Replace(l, `"firstName":"First2"`, `"firstName":"First 2"`, 1)
			}
		}
		if err := os.WriteFile(path, []byte(strings.Join(changed, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		code, out, errs := runCLI(t, "verify", "--oracle", "sql", "--mapping", mapping, "--source", src, "--target", dir)
		if code != 1 || !strings.Contains(out, `firstName: expected "First2" (string), found "First 2" (string)`) {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
	})
	t.Run("parts", func(t *testing.T) {
		// The person mapping splits by a hash of the id: three parts on
		// three connections build the same documents.
		code, out, errs := runCLI(t, "verify", "--oracle", "sql", "--oracle-workers", "3", "--mapping", mapping, "--source", src, "--target", dir)
		if code != 0 || !strings.Contains(out, "result: identical") || !strings.Contains(out, "built in parts on as many connections: people in 3") {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		f := strings.Fields(summaryRow(out, "people"))
		if f[0] != "502" || f[2] != "502" {
			t.Fatalf("3 parts: expected %s, identical %s, want 502\n%s", f[0], f[2], out)
		}
	})
	t.Run("sample roots", func(t *testing.T) {
		code, out, errs := runCLI(t, "verify", "--oracle", "sql", "--sample-roots", "40", "--mapping", mapping, "--source", src, "--target", dir)
		f := strings.Fields(summaryRow(out, "people"))
		if code != 0 || len(f) < 3 || f[0] != "40" || f[1] != "502" || f[2] != "40" {
			t.Fatalf("--sample-roots 40 of 502: exit %d, want 40 expected, 502 found, 40 identical\n%s%s", code, out, errs)
		}
		// Without half of the documents, a sample of 100 misses some.
		if err := os.WriteFile(path, []byte(strings.Join(lines[:251], "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
		code, out, errs = runCLI(t, "verify", "--oracle", "sql", "--sample-roots", "100", "--mapping", mapping, "--source", src, "--target", dir)
		f = strings.Fields(summaryRow(out, "people"))
		missing, _ := strconv.Atoi(f[3])
		unexpected, _ := strconv.Atoi(f[4])
		if code != 1 || f[0] != "100" || missing < 20 || missing > 80 || unexpected != 0 {
			t.Fatalf("--sample-roots 100 with half of the documents gone: exit %d, missing %d, unexpected %d\n%s%s", code, missing, unexpected, out, errs)
		}
	})
	t.Run("wide rows", func(t *testing.T) {
		// More fields than one json_build_object call takes (50 pairs),
		// and an expression reading a lookup of 60 columns.
		var cols, vals, lcols, lvals, sum []string
		for i := 1; i <= 120; i++ {
			cols = append(cols, fmt.Sprintf("c%d int", i))
			vals = append(vals, strconv.Itoa(i))
		}
		for i := 1; i <= 60; i++ {
			lcols = append(lcols, fmt.Sprintf("l%d int", i))
			lvals = append(lvals, strconv.Itoa(i*10))
			sum = append(sum, fmt.Sprintf("lk.l%d", i))
		}
		db := testenv.PostgresDB(t)
		testenv.Exec(t, db, fmt.Sprintf(`CREATE TABLE w (id int PRIMARY KEY, %s);
CREATE TABLE lk (id int PRIMARY KEY, %s);
INSERT INTO w VALUES (1, %s), (2, %s);
INSERT INTO lk VALUES (1, %s), (2, %s);`, strings.Join(cols, ", "), strings.Join(lcols, ", "), strings.Join(vals, ", "), strings.Join(vals, ", "), strings.Join(lvals, ", "), strings.Join(lvals, ", ")))
		m := writeMapping(t, fmt.Sprintf(`version: 1
collections:
  - name: ws
    table: w
    lookups: [{name: lk, table: lk, join: {id: id}}]
    fields: ["*", {name: total, expr: "%s"}]
`, strings.Join(sum, " + ")))
		out := t.TempDir()
		if code, o, e := runCLI(t, "migrate", "-q", "--mapping", m, "--source", db, "--target", out); code != 0 {
			t.Fatalf("migrate exit %d\n%s%s", code, o, e)
		}
		oracleIdentical(t, m, db, out)
	})
	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"--oracle", "builder"},
			{"--sample-roots", "10"},
			{"--oracle", "sql", "--sample-roots", "0x"},
			{"--oracle", "sql", "--sample-roots", "-1"},
			{"--oracle", "sql", "--sample-roots", "10", "--sample", "5"},
		} {
			code, out, errs := runCLI(t, append([]string{"verify", "--mapping", mapping, "--source", src, "--target", dir}, args...)...)
			if code != 2 {
				t.Errorf("%v: exit %d, want 2\n%s%s", args, code, out, errs)
			}
		}
	})
}
