package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestBoundedMemory migrates 10x more persons and checks that the run's
// working set (workingSet) grows by at most 20%, and that its peak live
// heap and peak RSS stay under absolute ceilings: memory depends on the
// batch size, not on the table size. Runs of both sizes are interleaved
// and medians compared (medianMemory says why the working set, not the
// RSS, is compared).
func TestBoundedMemory(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	mapping := example(t, "person")
	sizes := []int{50000, 500000}
	var dbs []string
	for _, n := range sizes {
		dbs = append(dbs, personsDB(t, n))
	}
	med := medianMemory(t, len(sizes), func(i int) memStats {
		return migrateMemory(t, bin, mapping, dbs[i], func(dir string) {
			if got := countLines(t, filepath.Join(dir, "people.jsonl")); got != sizes[i]+2 {
				t.Fatalf("%d persons: wrote %d documents, want %d", sizes[i], got, sizes[i]+2)
			}
		})
	}, func(i int) string { return fmt.Sprintf("%7d persons", sizes[i]) })
	// Measured at load 18 on 2 cores: working sets 8.8-9.7 MiB (50,000)
	// and 9.8 MiB (500,000), peak live heap 11-14 MiB, peak RSS 35-39 MiB.
	checkMemory(t, "10x the persons", med[0], med[1], memLimits{ratio: 1.2, heapCeiling: 32 << 20, rssCeiling: 80 << 20})
}

// TestNoPerParentQueries counts, with pg_stat_statements, the statements
// the source received during a migration: at most one per relation and
// batch, never one per person.
func TestNoPerParentQueries(t *testing.T) {
	mapping := example(t, "person")
	const n, batch = 5000, 500
	db := personsDB(t, n)
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
	// person, address and contact_detail are read as merge streams, one
	// query each for the whole run, and the contact detail types (a
	// lookup) once, then cached: 4 statements (measured). The limit allows
	// what the set-wise path, denorm's fallback when a stream cannot have
	// its own connection, takes - one query per relation and batch - plus
	// the catalog's queries; a query per person would be thousands.
	limit := batches*4 + 10
	t.Logf("%d persons in batches of %d: %d statements returned %d rows (limit %d)", n+2, batch, calls, rows, limit)
	if calls > limit {
		t.Errorf("the source received %d statements for %d persons; want at most %d (one per relation and batch)", calls, n+2, limit)
	}
	if rows < int64(n) {
		t.Errorf("statements returned only %d rows; the count is not measuring the migration", rows)
	}
}
