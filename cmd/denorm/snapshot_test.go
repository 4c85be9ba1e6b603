package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
)

// TestSnapshotConsistent: every collection of a run is read from the one
// snapshot the run took when it began. Writes committed to the source
// while the run is held at a checkpoint in its first collection (the
// checkpoint gate) show in none of the collections read afterwards: the
// files equal those of a run that finished before the writes, byte for
// byte. A migration writes nothing to the source: the tables' insert,
// update and delete counters (pg_stat_user_tables) do not move.
func TestSnapshotConsistent(t *testing.T) {
	bin, mapping, src := crashSetup(t, 300, 30, 300)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	writes := func() int64 {
		t.Helper()
		if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::int8 FROM pg_stat_user_tables`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	base := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--batch-size", "10"}
	// The loading connection's counts reach the statistics when its
	// backend exits, a moment after it was closed (CI once counted the
	// 330 rows loaded as written during the migration): the counters are
	// read until they hold still for half a second.
	before := writes()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		n := writes()
		if n == before {
			break
		}
		before = n
	}
	if before == 0 {
		t.Fatal("the source's write counters are 0 after loading it: they would not show a write")
	}
	ref := t.TempDir()
	runDenorm(t, bin, append(base, "--target", ref)...)
	if after := writes(); after != before {
		t.Errorf("the source's tables counted %d inserts, updates and deletes during a migration", after-before)
	}

	dir := t.TempDir()
	p := startGated(t, bin, append(base, "--target", dir, "--job", "snap")...)
	held, _ := p.until(func(c, _ *job.Record) bool { return c.Collection == "people" && written(c, "people") > 0 }, nil)
	if held == nil {
		p.wait()
		t.Fatalf("the run ended before its first checkpoint\n%s", p.output())
	}
	testenv.Exec(t, src, `
UPDATE person SET first_name = 'CHANGED';
UPDATE contact_detail SET detail = 'CHANGED';
UPDATE post SET name = 'CHANGED';
UPDATE comment SET comment = 'CHANGED';
INSERT INTO post (id, name) VALUES (999999, 'written during the run');
INSERT INTO comment (id, post_id, author, comment, created_at) VALUES (999999, 999999, 'late', 'late', now());`)
	p.ungate()
	if code := p.wait(); code != 0 {
		t.Fatalf("the held run: exit %d\n%s", code, p.output())
	}
	for _, c := range crashCollections {
		want, err := os.ReadFile(filepath.Join(ref, c+".jsonl"))
		if err != nil || len(want) == 0 {
			t.Fatalf("reference %s: %v (%d bytes)", c, err, len(want))
		}
		got, err := os.ReadFile(filepath.Join(dir, c+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			testenv.EqualDocs(t, c+" (writes committed while the run was held)", testenv.ReadLines(t, filepath.Join(ref, c+".jsonl")), testenv.ReadLines(t, filepath.Join(dir, c+".jsonl")))
			t.Errorf("%s differs from the run before the writes", c)
		}
	}
}
