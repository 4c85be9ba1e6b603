package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/testenv"
)

// identityFull is the SQL file that sets REPLICA IDENTITY FULL on every
// table of a database's own schemas: what a DBA runs for logical sync,
// here on the tests' own fixtures.
const identityFull = "cmd/denorm/testdata/replica-identity-full.sql"

// syncDB is a new database holding the SQL files (run with psql), with
// every table's replica identity FULL: a copy of a template loaded once
// per server (testenv.LoadedDB).
func syncDB(t testing.TB, files ...string) string {
	t.Helper()
	var paths []string
	for _, f := range append(files, identityFull) {
		paths = append(paths, repoPath(t, f))
	}
	return testenv.LoadedDB(t, paths...)
}

var jobSeq atomic.Int64

// syncJob names a sync job unique on the test server (replication slots
// are server-wide) and drops its slot when the test ends, before the
// database goes.
func syncJob(t testing.TB, db string) string {
	t.Helper()
	job := fmt.Sprintf("t%d_%d", os.Getpid(), jobSeq.Add(1))
	t.Cleanup(func() {
		if err := dropSlot(context.Background(), db, job); err != nil {
			t.Errorf("drop the slot of job %s: %v", job, err)
		}
	})
	return job
}

// denormCLI runs one denorm command line in-process and returns its
// output (stdout then stderr) and exit code.
func denormCLI(args ...string) (string, int) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return out.String() + errb.String(), code
}

// mustCLI runs a command line in-process and fails the test unless it
// exits 0.
func mustCLI(t testing.TB, args ...string) string {
	t.Helper()
	out, code := denormCLI(args...)
	if code != 0 {
		t.Fatalf("denorm %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}

// fanoutSteps are writes to the seed schema that reach every pattern the
// examples use: a lookup renamed, a child moved to another parent, a row
// inserted in the middle of a bucket order and rows deleted so that a
// parent has fewer pages, join table rows added and removed, a filter that
// stops and starts matching, a partial copy renamed, documents of shared
// collections moved and re-keyed, parents deleted with their children,
// and a TRUNCATE.
var fanoutSteps = []string{
	`UPDATE contact_detail_type SET name = 'mail' WHERE id = 1;
	 UPDATE address SET person_id = 2 WHERE id = 1;
	 INSERT INTO contact_detail (id, person_id, type_id, detail, extension) VALUES (10, 2, 2, '+1 000', 12);
	 INSERT INTO person (id, first_name, last_name) VALUES (3, 'New', 'Person');`,
	`INSERT INTO comment VALUES (900, 1, 'mid', 'in the middle', '2024-01-01 00:30:30+00');
	 UPDATE comment SET post_id = 2 WHERE id = 250;
	 DELETE FROM comment WHERE id BETWEEN 100 AND 199;
	 UPDATE comment SET created_at = '2023-01-01' WHERE id = 251;`,
	`UPDATE stock SET open = 3.5, high = 4 WHERE id = 1;
	 DELETE FROM holding WHERE person_id = 1 AND stock_id = 2;
	 UPDATE holding SET stock_id = 2 WHERE person_id = 1 AND stock_id = 1;
	 INSERT INTO holding VALUES (2, 1, 3);`,
	`UPDATE book SET pub_id = NULL WHERE id = 'b2';
	 INSERT INTO publisher VALUES ('oreilly', 'O''Reilly');
	 UPDATE book SET pub_id = 'oreilly' WHERE id IN ('b3', 'b5');
	 UPDATE author SET first_name = 'Tom' WHERE id = 'a1';`,
	`INSERT INTO book_author VALUES ('b5', 'a2');
	 DELETE FROM book_author WHERE book_id = 'b1' AND author_id = 'a2';`,
	`UPDATE author_image SET kind = 'profile' WHERE id = 1;
	 INSERT INTO author_image VALUES (5, 'a2', 'thumbnail', 'http://img.example/a2-new.png');
	 UPDATE author_image SET author_id = 'a2' WHERE id = 2;
	 UPDATE author_image SET kind = 'thumbnail' WHERE id = 3;
	 INSERT INTO review VALUES ('r3', 'b2', 'meh');
	 UPDATE review SET book_id = 'b3' WHERE id = 'r1';
	 UPDATE review SET id = 'r9' WHERE id = 'r3';`,
	`DELETE FROM contact_detail WHERE person_id = 1; DELETE FROM holding WHERE person_id = 1; DELETE FROM person WHERE id = 1;
	 DELETE FROM comment WHERE post_id = 2; DELETE FROM post WHERE id = 2;
	 DELETE FROM review WHERE book_id = 'b1'; DELETE FROM book_author WHERE book_id = 'b1'; DELETE FROM book WHERE id = 'b1';`,
	`TRUNCATE comment, review, author_image;
	 INSERT INTO comment SELECT 2000 + n, 3, 'x', 'c' || n, '2025-01-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 150) n;`,
}

// seedExamples are the example mappings over seed.sql.
var seedExamples = []string{"person", "blog", "portfolio", "portfolio-embedded", "publishing", "authors-books", "hybrid", "catalog"}

// TestSyncFanout: for each method, every example mapping over one seed
// database is synced (the first sync makes the copy), then after each of
// fanoutSteps sync --once must leave the target exactly as the source
// gives it: denorm verify exits 0 (every document equal as BSON, none
// missing, none left over).
func TestSyncFanout(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	for _, method := range []string{"logical", "diff"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			db := syncDB(t, "testdata/examples/seed.sql")
			type job struct{ name, mapping, target string }
			var jobs []job
			for _, ex := range seedExamples {
				uri, _ := testenv.MongoDB(t)
				jobs = append(jobs, job{syncJob(t, db), example(t, ex), uri})
			}
			syncAll := func(step int) {
				for _, j := range jobs {
					out := mustCLI(t, "sync", "-q", "--mapping", j.mapping, "--source", db, "--target", j.target, "--job", j.name, "--method", method, "--once")
					if vout, code := denormCLI("verify", "-q", "--mapping", j.mapping, "--source", db, "--target", j.target, "--show", "5"); code != 0 {
						t.Fatalf("step %d, %s: verify exit %d after sync:\n%s\n%s", step, j.mapping, code, out, vout)
					}
				}
			}
			syncAll(0)
			for i, sql := range fanoutSteps {
				testenv.Exec(t, db, sql)
				syncAll(i + 1)
			}
		})
	}
}

// TestSyncSchemaChange: a schema change of a mapped table while sync
// follows - a column the mapping reads dropped (and the table written
// after, or only another table whose documents read it), another's type
// changed -
// stops sync (exit 1) with a message naming the table, the column and
// what to run, and no document is written after the change.
func TestSyncSchemaChange(t *testing.T) {
	bin := denormBinary(t)
	for _, tc := range []struct{ name, sql, table, change string }{
		// The stream describes comment again only before its next change:
		// the post's rebuild, which reads comments, meets the change first.
		{"dropped", `ALTER TABLE comment DROP COLUMN author;
			UPDATE post SET name = 'after the drop' WHERE id = 1`,
			"public.comment", `column "author" was dropped`},
		{"dropped-then-written", `ALTER TABLE comment DROP COLUMN author;
			INSERT INTO comment (id, post_id, comment, created_at) VALUES (990, 1, 'after the drop', '2025-01-01')`,
			"public.comment", `column "author" was dropped`},
		{"retyped", `ALTER TABLE post ALTER COLUMN name TYPE varchar(200);
			UPDATE post SET name = 'after the change' WHERE id = 1`,
			"public.post", `column "name" changed type from text to varchar`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := syncDB(t, "testdata/examples/seed.sql")
			target, tdb := testenv.MongoDB(t)
			job := syncJob(t, db)
			args := []string{"sync", "-v", "--mapping", example(t, "blog"), "--source", db, "--target", target, "--job", job, "--method", "logical"}
			mustCLI(t, append(args, "--once")...)
			p := startSync(t, nil, bin, append(args, "--follow")...)
			t.Cleanup(func() {
				select {
				case <-p.done:
				default:
					p.kill()
				}
			})
			testenv.Exec(t, db, `UPDATE comment SET comment = 'before the change' WHERE id = (SELECT min(id) FROM comment)`)
			if !p.waitOutput("position confirmed", 0, 2*time.Minute) {
				t.Fatalf("sync applied no batch:\n%s", p.out)
			}
			before := map[string][]string{}
			for _, c := range []string{"posts", "comments"} {
				before[c] = testenv.DumpCollection(t, tdb, c)
			}
			testenv.Exec(t, db, tc.sql)
			select {
			case <-p.done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("sync goes on after the schema change:\n%s", p.out)
			}
			code, out := p.code, p.out.String()
			if code != 1 {
				t.Fatalf("exit %d after the schema change, want 1:\n%s", code, out)
			}
			for _, want := range []string{"table " + tc.table + " changed while syncing", tc.change, "denorm sync --drop"} {
				if !strings.Contains(out, want) {
					t.Errorf("sync's message does not say %q:\n%s", want, out)
				}
			}
			for _, c := range []string{"posts", "comments"} {
				testenv.EqualDocs(t, c, before[c], testenv.DumpCollection(t, tdb, c))
			}
			t.Logf("sync stopped: %s", lastLine(out))
		})
	}
}

// TestSyncSlotLost: a job whose replication slot was dropped behind its
// back does not fail and needs no --drop: the next sync says what
// happened, catches up with a diff against the source from a new slot's
// snapshot, and streams from that slot on; the target is exact after
// each.
func TestSyncSlotLost(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	db := syncDB(t, "testdata/examples/seed.sql")
	target, _ := testenv.MongoDB(t)
	job := syncJob(t, db)
	mapping := example(t, "blog")
	args := []string{"sync", "--mapping", mapping, "--source", db, "--target", target, "--job", job}
	mustCLI(t, append(args, "--method", "logical", "--once")...)
	// The slot dropped by hand, and changes the job will never read from
	// it: the next sync catches up by a diff and streams from a new slot.
	testenv.Exec(t, db, fmt.Sprintf(`SELECT pg_drop_replication_slot('denorm_%s');
		UPDATE comment SET comment = 'lost' WHERE id = (SELECT min(id) FROM comment)`, job))
	out := mustCLI(t, append(args, "--once")...)
	for _, want := range []string{"replication slot denorm_" + job + " does not exist", "catching up with a diff against the source, then streaming from a new replication slot"} {
		if !strings.Contains(out, want) {
			t.Errorf("sync does not say %q:\n%s", want, out)
		}
	}
	t.Logf("sync after the slot was lost:\n%s", out)
	if vout, code := denormCLI("verify", "-q", "--mapping", mapping, "--source", db, "--target", target, "--show", "5"); code != 0 {
		t.Fatalf("verify exit %d after the catch-up:\n%s", code, vout)
	}
	// And it streams from the new slot.
	testenv.Exec(t, db, `UPDATE comment SET comment = 'after' WHERE id = (SELECT max(id) FROM comment)`)
	mustCLI(t, append(args, "--once")...)
	if vout, code := denormCLI("verify", "-q", "--mapping", mapping, "--source", db, "--target", target, "--show", "5"); code != 0 {
		t.Fatalf("verify exit %d after streaming from the new slot:\n%s", code, vout)
	}
}

// lastLine is the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

// TestSyncRoutineEventsAreInfo: the replication slot made, the initial
// copy and a collection rebuilt whole after a TRUNCATE are routine: said
// as information (not warnings), and -q hides them.
func TestSyncRoutineEventsAreInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	t.Parallel()
	db := syncDB(t, "testdata/examples/seed.sql")
	// (A slot waiting for transactions other tests hold open says so as a
	// warning: that is no routine event.)
	routine := []string{"; copying its snapshot", "initial copy:", "rebuilding whole by a diff"}
	for _, quiet := range []bool{true, false} {
		uri, _ := testenv.MongoDB(t)
		name := syncJob(t, db)
		sync := func() string {
			args := []string{"sync", "--mapping", example(t, "blog"), "--source", db, "--target", uri, "--job", name, "--method", "logical", "--once"}
			if quiet {
				args = append(args, "-q")
			}
			return mustCLI(t, args...)
		}
		out := sync()
		testenv.Exec(t, db, `BEGIN; TRUNCATE comment; INSERT INTO comment SELECT 3000 + n, 1, 'x', 'c' || n, '2025-01-01'::timestamptz + n * interval '1 s' FROM generate_series(1, 5) n; COMMIT;`)
		out += sync()
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "denorm: ") {
				continue // the summary, which -q keeps
			}
			for _, r := range routine {
				if !strings.Contains(line, r) {
					continue
				}
				if quiet {
					t.Errorf("-q printed a routine event: %q", line)
				}
				if strings.Contains(line, "warning") {
					t.Errorf("a routine event printed as a warning: %q", line)
				}
			}
		}
		if !quiet {
			for _, r := range routine {
				if !strings.Contains(out, r) {
					t.Errorf("without -q, no line tells %q:\n%s", r, out)
				}
			}
		}
	}
}

// TestSyncWaitsForOpenTransactionsAloud: a job whose replication slot
// waits for a transaction open on the source says so while it waits, and
// goes on once it ends.
func TestSyncWaitsForOpenTransactionsAloud(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	db := syncDB(t, "testdata/examples/seed.sql")
	uri, _ := testenv.MongoDB(t)
	name := syncJob(t, db)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE person SET first_name = first_name WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		out  string
		code int
	}
	done := make(chan result, 1)
	go func() {
		out, code := denormCLI("sync", "--mapping", example(t, "person"), "--source", db, "--target", uri, "--job", name, "--method", "logical", "--once")
		done <- result{out, code}
	}()
	select {
	case r := <-done:
		t.Fatalf("sync ended while a transaction was open (exit %d):\n%s", r.code, r.out)
	case <-time.After(4 * time.Second):
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("sync exit %d:\n%s", r.code, r.out)
	}
	if !strings.Contains(r.out, "waits for") || !strings.Contains(r.out, "open transaction(s) on the source to end") {
		t.Errorf("sync did not say what it waited for:\n%s", r.out)
	}
}
