package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestBoundedMemory migrates 10x more persons and checks that peak memory
// does not grow by more than 20%: memory depends on the batch size, not on
// the table size. Peak RSS moves by a few MiB with GC timing (more so when
// other tests load the CPU), so runs of both sizes are interleaved and
// their medians compared.
func TestBoundedMemory(t *testing.T) {
	bin := denormBinary(t)
	mapping := example(t, "person")
	sizes := []int{50000, 500000}
	var dbs []string
	for _, n := range sizes {
		dbs = append(dbs, personsDB(t, n))
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
	underCeiling(t, large)
}

// memCeilingKiB is the absolute ceiling of a run's peak RSS (300 MB, as
// README and make bench promise), checked besides each memory test's
// ratio: a ratio alone passes when both sizes are equally too large.
const memCeilingKiB = 300_000_000 / 1024

// underCeiling fails the test when a median peak RSS is over the ceiling.
func underCeiling(t *testing.T, kib int64) {
	t.Helper()
	if kib >= memCeilingKiB {
		t.Errorf("median peak RSS %d KiB, want under %d KiB (300 MB)", kib, int64(memCeilingKiB))
	}
}

// TestNoPerParentQueries counts, with pg_stat_statements, the statements
// the source received during a migration: their number depends on the
// number of batches, not on the number of persons.
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
