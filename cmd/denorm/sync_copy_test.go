package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/churn"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
)

// syncCopyMapping is sync-mixed.yaml with the people first: the test
// aims its first kills at a collection whose documents are one per root
// row, so that what a kill lost can be counted in the target.
const syncCopyMapping = `version: 1
collections:
  - name: people
    table: person
    fields:
      - first_name
      - last_name
      - name: addresses
        embed:
          table: address
          join: {person_id: id}
          orderBy: id
          fields: [line1, city, zip]
      - name: contactDetails
        embed:
          table: contact_detail
          join: {person_id: id}
          orderBy: id
          lookups:
            - {name: type, table: contact_detail_type, join: {id: type_id}}
          fields:
            - {key: type.name, column: detail}
            - extension
  - name: posts
    table: post
    fields:
      - name
      - summary
      - name: recentComments
        embed:
          table: comment
          join: {post_id: id}
          orderBy: [created_at desc, id desc]
          limit: 3
          fields: [id, author, comment]
  - name: comments
    table: comment
    bucket: {by: post_id, size: 20, orderBy: [created_at, id], items: comments}
    fields: [id, author, comment]
`

// TestSyncCopyWorkersResume: `sync --method logical --workers 2` is
// killed (SIGKILL, aimed by DENORM_TEST_HALT) three times during its
// initial copy while a writer changes every mapped table: twice in the
// people collection, once later (posts or the comment buckets). After
// each kill the checkpoint says the copy is in progress, with the slot's
// position to stream from and each worker's position; the people
// documents the killed run wrote past its saved positions - the rows the
// next run reads again - are at most one batch per worker; the next run
// resumes from the saved positions (the run that finishes the people
// reads exactly the rows left), keeping the copy's 2 workers though
// started with 1. Once the writer stops and sync has caught up, the
// target is exactly a fresh migrate of the source and verify exits 0.
func TestSyncCopyWorkersResume(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	db := syncDB(t, "testdata/examples/seed.sql")
	const batch, workers = 100, 2
	// Few posts and comments (their buckets are slow to rebuild on
	// FerretDB), 2,000 people with their children.
	addSyncData(t, db, 300)
	testenv.Exec(t, db, `
INSERT INTO person SELECT 5000 + g, 'More' || g, 'People' || g FROM generate_series(1, 1700) g;
INSERT INTO contact_detail SELECT 5000 + g, 5000 + (g + 1) / 2, 1 + g % 3, 'more-' || g, NULLIF(g % 4, 0) FROM generate_series(1, 3400) g;
INSERT INTO address SELECT 5000 + g, 5000 + g, 1, g || ' Side Street', 'Shelbyville', NULL, NULL, 20000 + g FROM generate_series(1, 1700) g;
ANALYZE;`)
	allPersons, err := strconv.Atoi(testenv.QueryString(t, db, "(SELECT count(*) FROM person)"))
	if err != nil {
		t.Fatal(err)
	}
	target, tdb := testenv.MongoDB(t)
	jobName := syncJob(t, db)
	mapping := filepath.Join(t.TempDir(), "sync-copy.yaml")
	if err := os.WriteFile(mapping, []byte(syncCopyMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	seed := churn.Seeds(t, 1)[0]
	rng := rand.New(rand.NewPCG(seed, 3))
	t.Logf("seed %d (replay: DENORM_TEST_SEED=%d)", seed, seed)
	w := startSeedWriter(t, db, seed, 10*time.Millisecond, 3)
	args := func(n int) []string {
		return []string{"sync", "-v", "--mapping", mapping, "--source", db, "--target", target, "--job", jobName,
			"--method", "logical", "--once", "--batch-size", strconv.Itoa(batch), "--workers", strconv.Itoa(n), "--lease-ttl", "1s"}
	}
	// run starts sync until it ends by itself (a lease the last killed
	// run still holds: again); halt "" runs it to the end.
	run := func(n int, halt string) (string, int) {
		t.Helper()
		var env []string
		if halt != "" {
			env = []string{haltEnv + "=" + halt}
		}
		for start := time.Now(); ; {
			p := startSync(t, env, bin, args(n)...)
			select {
			case <-p.done:
			case <-time.After(4 * time.Minute):
				p.kill()
				t.Fatalf("sync (halt %q) did not end:\n%s", halt, p.out)
			}
			out := p.out.String()
			if p.code == 1 && strings.Contains(out, "is being run by another process") && time.Since(start) < time.Minute {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			return out, p.code
		}
	}
	people := tdb.Collection("people")
	count := func() int64 {
		n, err := people.CountDocuments(context.Background(), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// saved is what the checkpoint says of the people: rows read and
	// acknowledged by all workers, and whether the entry is done.
	saved := func(c *job.Record) (rows int64, done bool) {
		done = true
		for _, s := range c.Streams {
			if s.Collection == "people" {
				rows += s.Rows
				done = done && s.Done
			}
		}
		return rows, done
	}
	// Runs alternate --workers 2 and 1: a copy resumed keeps the
	// number it started with.
	flag := func(i int) int { return workers - i%2*(workers-1) }
	kill := func(i int, halt string) (*job.Record, string) {
		t.Helper()
		start := time.Now()
		out, code := run(flag(i), halt)
		if code != -1 || !strings.Contains(out, "halting at") {
			t.Fatalf("run %d (halt %s): exit %d, want killed:\n%s", i, halt, code, out)
		}
		c := peekCheckpoint(target, jobName)
		switch {
		case c == nil || c.Sync == nil:
			t.Fatalf("run %d: no checkpoint after the kill", i)
		case c.Phase != job.PhaseRunning || !c.HasPosition() || c.Workers != workers:
			t.Fatalf("run %d: the checkpoint does not say a copy of %d workers is in progress from the slot's position: phase %s, position %s, workers %d",
				i, workers, c.Phase, c.Sync.Position, c.Workers)
		}
		if i > 0 && !strings.Contains(out, "resuming the initial copy from a new snapshot") {
			t.Errorf("run %d does not say it resumed the copy:\n%s", i, out)
		}
		t.Logf("run %d (--workers %d) killed at %s, in collection %q, after %s", i, flag(i), halt, c.Collection, time.Since(start).Round(time.Millisecond))
		return c, out
	}
	entryDone := regexp.MustCompile(`copy entry done collection=people rows=(\d+) before=(\d+)`)
	// Two kills in the people collection (their first batches' saves,
	// one per batch of each worker, and the entry's own).
	var prior int64
	for i, halt := range []string{
		fmt.Sprintf("copy checkpoint saved:%d", 3+rng.IntN(6)),
		fmt.Sprintf("copy checkpoint saved:%d", 2+rng.IntN(5)),
	} {
		c, _ := kill(i, halt)
		rows, done := saved(c)
		docs := count()
		if c.Collection != "people" || done {
			t.Fatalf("run %d was killed in %q (people done: %v); the test aims at the people", i, c.Collection, done)
		}
		// The documents written past the saved positions are what the
		// next run reads and writes again.
		t.Logf("run %d: %d people rows saved, %d documents in the target: %d to read again (at most %d)", i, rows, docs, docs-rows, workers*batch)
		if docs-rows > workers*batch || docs < rows {
			t.Errorf("run %d: %d people documents in the target, %d rows saved: %d past the checkpoint, want 0 to %d (a batch per worker)",
				i, docs, rows, docs-rows, workers*batch)
		}
		if rows < prior {
			t.Errorf("run %d: %d people rows saved, fewer than the %d saved before it: the copy started over", i, rows, prior)
		}
		prior = rows
	}
	// A kill once the run has finished the people (the first entry
	// done: a count of checkpoint saves would depend on how often they
	// are made, and once let the whole copy end first), reading exactly
	// the rows left after the saved positions (the writer adds or
	// removes no person).
	_, out := kill(2, "copy entry done:1")
	m := entryDone.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("run 2 did not finish the people:\n%s", out)
	}
	read, _ := strconv.ParseInt(m[1], 10, 64)
	before, _ := strconv.ParseInt(m[2], 10, 64)
	t.Logf("run 2 read %d people rows, %d were copied before", read, before)
	if before != prior || read+before != int64(allPersons) {
		t.Errorf("run 2 read %d people rows after %d copied before; want %d after %d (the saved positions), %d in all",
			read, before, int64(allPersons)-prior, prior, allPersons)
	}
	// The writer stops once the copy is done (the checkpoint says so):
	// what it wrote during the copies is what the stream must make
	// exact, and the catch-up stays short.
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if c := peekCheckpoint(target, jobName); c != nil && c.Phase == job.PhaseDone {
				break
			}
		}
		w.halt()
	}()
	start := time.Now()
	out, code := run(flag(3), "")
	<-copied
	t.Logf("run 3 (--workers %d) finished the copy and caught up in %s", flag(3), time.Since(start).Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("the resumed sync: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, "was started with 2 workers") {
		t.Errorf("the resumed sync (--workers 1) did not say the copy keeps its 2 workers:\n%s", out)
	}
	w.halt()
	w.report(t)
	start = time.Now()
	t.Logf("catch-up:\n%s", mustCLI(t, args(workers)...))
	t.Logf("catch-up in %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	defer func() { t.Logf("comparison in %s", time.Since(start).Round(time.Millisecond)) }()
	if n := count(); n != int64(allPersons) {
		t.Errorf("%d people documents, want %d", n, allPersons)
	}
	sameAsFreshMigrate(t, mapping, db, target)
}

// TestMigrateSyncLogicalWorkers: `migrate --sync logical --workers 2`
// migrates the slot's snapshot with two workers sharing it; writes made
// during and after it reach the target through the sync that continues
// the job (without a copy), which then equals a fresh migrate.
func TestMigrateSyncLogicalWorkers(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	db := syncDB(t, "testdata/examples/seed.sql")
	addSyncData(t, db, 400)
	target, _ := testenv.MongoDB(t)
	jobName := syncJob(t, db)
	seed := churn.Seeds(t, 1)[0]
	t.Logf("writer's seed %d (replay: DENORM_TEST_SEED=%d)", seed, seed)
	w := startSeedWriter(t, db, seed, 5*time.Millisecond, 3)
	out := mustCLI(t, "migrate", "--progress", "none", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", jobName,
		"--sync", "logical", "--workers", "2", "--batch-size", "50")
	w.halt()
	w.report(t)
	if c := peekCheckpoint(target, jobName); c == nil || c.Workers != 2 || !c.HasPosition() || c.Phase != job.PhaseDone {
		t.Fatalf("after migrate --sync logical --workers 2, the checkpoint is %+v:\n%s", c, out)
	}
	out = mustCLI(t, "sync", "--mapping", syncMixed(t), "--source", db, "--target", target, "--job", jobName, "--once")
	if strings.Contains(out, "initial copy") {
		t.Errorf("sync after migrate --sync logical made a copy:\n%s", out)
	}
	sameAsFreshMigrate(t, syncMixed(t), db, target)
}
