package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// TestFloatAggregatesStable: sums and averages of doubles, on a database
// tuned so that PostgreSQL plans them in parallel, are the same in every
// run, and verify finds an untouched target identical.
func TestFloatAggregatesStable(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE grp (g int PRIMARY KEY);
INSERT INTO grp SELECT generate_series(1, 3);
CREATE TABLE big (id int PRIMARY KEY, g int NOT NULL, x float8 NOT NULL);
INSERT INTO big SELECT i, 1 + i % 3, (CASE WHEN i % 7 = 0 THEN 1e15 ELSE 1 END) * sin(i) FROM generate_series(1, 60000) i ORDER BY md5(i::text);
ANALYZE big;
DO $$ BEGIN
  EXECUTE format('ALTER DATABASE %I SET parallel_setup_cost = 0', current_database());
  EXECUTE format('ALTER DATABASE %I SET parallel_tuple_cost = 0', current_database());
  EXECUTE format('ALTER DATABASE %I SET min_parallel_table_scan_size = 0', current_database());
END $$;`)
	mapping := filepath.Join(t.TempDir(), "sums.yaml")
	if err := os.WriteFile(mapping, []byte(`version: 1
collections:
  - name: groups
    table: grp
    fields:
      - {name: total, aggregate: {fn: sum, table: big, join: {g: g}, column: x}}
      - {name: mean, aggregate: {fn: avg, table: big, join: {g: g}, column: x}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var first []string
	for run := range 3 {
		dir := filepath.Join(t.TempDir(), "out")
		if code, out, errs := runCLI(t, "migrate", "-q", "--mapping", mapping, "--source", src, "--target", dir); code != 0 {
			t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
		}
		docs := testenv.ReadLines(t, filepath.Join(dir, "groups.jsonl"))
		if run == 0 {
			first = docs
		} else if !slices.Equal(docs, first) {
			t.Errorf("run %d differs:\n%v\nfirst run:\n%v", run, docs, first)
		}
		if code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", dir); code != 0 {
			t.Errorf("verify of an untouched target: exit %d\n%s%s", code, out, errs)
		}
	}
}
