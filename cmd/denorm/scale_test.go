package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/procmem"
	"github.com/denorm/denorm/internal/testenv"
)

// addPersons adds n generated persons (ids from 1000) with 2 contact
// details each and an address for 3 persons out of 2 to the seed schema.
func addPersons(t testing.TB, db string, n int) {
	t.Helper()
	testenv.Exec(t, db, fmt.Sprintf(`
INSERT INTO person (id, first_name, last_name)
SELECT 1000 + g, 'First' || g, 'Last ' || md5(g::text) FROM generate_series(1, %[1]d) g;
INSERT INTO contact_detail (id, person_id, type_id, detail, extension)
SELECT 1000 + g, 1000 + (g + 1) / 2, 1 + g %% 3, 'detail-' || g, CASE WHEN g %% 4 = 0 THEN g END
FROM generate_series(1, 2 * %[1]d) g;
INSERT INTO address (id, person_id, type_id, line1, city, state, zip)
SELECT 1000 + g, 1000 + (g * 2 + 2) / 3, 1, g || ' Main Street', 'Springfield', 'ZZ', 10000 + g %% 90000
FROM generate_series(1, (3 * %[1]d) / 2) g;
ANALYZE;`, n))
}

// buildBinary compiles denorm once for subprocess tests.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "denorm")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	return bin
}

// peakRSS runs denorm and returns its peak resident set size in KiB.
func peakRSS(t *testing.T, bin string, args ...string) int64 {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	kib, err := procmem.Run(cmd, 5*time.Millisecond)
	if err != nil {
		t.Fatalf("denorm %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return kib
}

// medianPeaks measures the peak RSS of run(i) for every size i, five
// rounds interleaved (so machine load and GC timing hit every size alike),
// logs every figure and returns each size's median in KiB. Peak RSS moves
// by a few MiB from run to run: medians of interleaved runs are what can
// be compared.
func medianPeaks(t *testing.T, sizes int, run func(i int) int64, name func(i int) string) []int64 {
	t.Helper()
	const runs = 5
	rss := make([][]int64, sizes)
	for r := 0; r < runs; r++ {
		for i := range rss {
			rss[i] = append(rss[i], run(i))
		}
	}
	med := make([]int64, sizes)
	for i := range rss {
		s := slices.Clone(rss[i])
		slices.Sort(s)
		med[i] = s[len(s)/2]
		t.Logf("%s: peak RSS of %d runs %v KiB, median %.1f MiB", name(i), runs, rss[i], float64(med[i])/1024)
	}
	return med
}

// migratePeak migrates db with mapping into a fresh directory, has check
// look at the output, and returns the run's peak RSS in KiB.
func migratePeak(t *testing.T, bin, mapping, db string, check func(dir string)) int64 {
	t.Helper()
	dir := t.TempDir()
	kib := peakRSS(t, bin, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", dir)
	check(dir)
	_ = os.RemoveAll(dir)
	return kib
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	return len(testenv.ReadLines(t, path))
}

// TestBoundedMemory migrates 10x more persons and checks that peak memory
// does not grow by more than 20%: memory depends on the batch size, not on
// the table size. Peak RSS moves by a few MiB with GC timing (more so when
// other tests load the CPU), so runs of both sizes are interleaved and
// their medians compared.
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	root := testenv.Root(t)
	bin := buildBinary(t)
	mapping := filepath.Join(root, "mappings", "examples", "person.yaml")
	seed := filepath.Join(root, "testdata", "examples", "seed.sql")
	sizes := []int{50000, 500000}
	var dbs []string
	for _, n := range sizes {
		db := testenv.PostgresDB(t, seed)
		addPersons(t, db, n)
		dbs = append(dbs, db)
	}
	med := medianPeaks(t, len(sizes), func(i int) int64 {
		return migratePeak(t, bin, mapping, dbs[i], func(dir string) {
			if got := countLines(t, filepath.Join(dir, "people.jsonl")); got != sizes[i]+2 {
				t.Fatalf("%d persons: wrote %d documents, want %d", sizes[i], got, sizes[i]+2)
			}
		})
	}, func(i int) string { return fmt.Sprintf("%7d persons", sizes[i]) })
	small, large := med[0], med[1]
	if ratio := float64(large) / float64(small); ratio > 1.2 {
		t.Errorf("median peak RSS grew %.2fx for 10x the rows (%d KiB -> %d KiB); want at most 1.2x", ratio, small, large)
	}
}

// TestNoPerParentQueries counts, with pg_stat_statements, the statements
// the source received during a migration: their number depends on the
// number of batches, not on the number of persons.
func TestNoPerParentQueries(t *testing.T) {
	root := testenv.Root(t)
	mapping := filepath.Join(root, "mappings", "examples", "person.yaml")
	db := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
	const n, batch = 5000, 500
	addPersons(t, db, n)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		t.Fatalf("pg_stat_statements is needed (scripts/pg.sh preloads it): %v", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "migrate", "-q", "--batch-size", fmt.Sprint(batch), "--mapping", mapping, "--source", db, "--target", t.TempDir())
	if code != 0 {
		t.Fatalf("migrate exit %d\n%s%s", code, out, errs)
	}
	time.Sleep(100 * time.Millisecond)
	var calls, rows int64
	err = conn.QueryRow(ctx, `
SELECT coalesce(sum(s.calls), 0)::int8, coalesce(sum(s.rows), 0)::int8
FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
WHERE d.datname = current_database() AND s.query ~* '(person|address|contact_detail)' AND s.query !~* 'pg_stat_statements'`).Scan(&calls, &rows)
	if err != nil {
		t.Fatal(err)
	}
	batches := int64((n+2)/batch + 1)
	// Per batch: the person page, addresses, contact details, and the
	// contact detail types; plus the catalog queries.
	limit := batches*4 + 10
	t.Logf("%d persons in batches of %d: %d statements returned %d rows (limit %d)", n+2, batch, calls, rows, limit)
	if calls > limit {
		t.Errorf("the source received %d statements for %d persons; want at most %d (one per relation per batch)", calls, n+2, limit)
	}
	if rows < int64(n) {
		t.Errorf("statements returned only %d rows; the count is not measuring the migration", rows)
	}
}
