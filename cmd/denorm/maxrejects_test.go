package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
)

// manyRejects: 300 events, every tenth at an infinite time (30 rows a
// document cannot hold); 200 notes, all fine.
const manyRejects = `
CREATE TABLE ev (id int PRIMARY KEY, at timestamptz NOT NULL);
INSERT INTO ev SELECT g, CASE WHEN g % 10 = 0 THEN 'infinity' ELSE '2024-01-01 10:00+00'::timestamptz + g * interval '1 minute' END FROM generate_series(1, 300) g;
CREATE TABLE note (id int PRIMARY KEY, body text NOT NULL);
INSERT INTO note SELECT g, 'note ' || g FROM generate_series(1, 200) g;
ANALYZE;
`

const manyRejectsMapping = `version: 1
collections:
  - name: events
    table: ev
  - name: notes
    table: note
`

func manyRejectsDB(t *testing.T) (src, mapping string) {
	t.Helper()
	src = testenv.PostgresDB(t)
	testenv.Exec(t, src, manyRejects)
	mapping = filepath.Join(t.TempDir(), "events.yaml")
	if err := os.WriteFile(mapping, []byte(manyRejectsMapping), 0o644); err != nil {
		t.Fatal(err)
	}
	return src, mapping
}

// rejectedIDs are the ids of the ev rows a rejects file lists, in its
// order.
func rejectedIDs(t *testing.T, path string) []int {
	t.Helper()
	var ids []int
	for _, r := range readRejects(t, path) {
		var id int
		if _, err := fmt.Sscanf(r.Source, "ev (id)=(%d)", &id); err != nil || r.Collection != "events" {
			t.Fatalf("a reject of %s %q", r.Collection, r.Source)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestRejectsCut: stderr shows the first 20 rejected rows, then how
// many more the rejects file lists; without a file, how to see them.
func TestRejectsCut(t *testing.T) {
	src, mapping := manyRejectsDB(t)
	rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
	code, out, errs := runCLI(t, "migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", t.TempDir(), "--rejects", rejects)
	if code != exitRejected {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitRejected, out, errs)
	}
	if n := strings.Count(errs, "denorm: warning: rejected collection=events"); n != 20 {
		t.Errorf("%d rejected rows shown on stderr, want 20:\n%s", n, errs)
	}
	if want := "denorm: ... and 10 more in " + rejects + " (30 rows rejected in all)\n"; !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
	if n := len(rejectedIDs(t, rejects)); n != 30 {
		t.Errorf("the rejects file lists %d rows, want 30", n)
	}
	code, out, errs = runCLI(t, "migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", t.TempDir())
	if want := "denorm: warning: ... and 10 more not shown (30 rows rejected in all): --rejects FILE lists every one, -v shows every one here\n"; code != exitRejected || !strings.Contains(errs, want) {
		t.Errorf("without --rejects: exit %d, stderr lacks %q:\n%s%s", code, want, out, errs)
	}
}

// TestMaxRejects: --max-rejects 5 stops a job on FerretDB once 5 rows
// were rejected: exit 5, the batches in flight written and the
// checkpoint saved, the rejects file listing every row rejected before
// the stop, the summary (table and file) saying why it stopped; the
// resume continues from the checkpoint and ends with every good row
// written and every bad one listed once. A directory target without a
// job stops the same way.
func TestMaxRejects(t *testing.T) {
	src, mapping := manyRejectsDB(t)
	uri, db := testenv.MongoDB(t)
	dir := t.TempDir()
	rejects := filepath.Join(dir, "rejects.jsonl")
	sumFile := filepath.Join(dir, "summary.json")
	args := []string{"migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", uri, "--job", "ev", "--batch-size", "20", "--rejects", rejects, "--summary-file", sumFile}
	code, out, errs := runCLI(t, append(args, "--max-rejects", "5")...)
	if code != exitStopped {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitStopped, out, errs)
	}
	// Batches of 20 rows hold 2 bad ones: the third batch's second
	// (id 60) is the 6th, rejected with the 5th in the same batch.
	ids := rejectedIDs(t, rejects)
	if !slices.Equal(ids, []int{10, 20, 30, 40, 50, 60}) {
		t.Errorf("rejects file after the stop: %v, want 10..60", ids)
	}
	for _, want := range []string{
		"denorm: stopped: 6 rows were rejected, --max-rejects 5; they are listed in " + rejects,
		`the checkpoint is saved (collection "events")`,
		"--job ev --batch-size 20 --resume --rejects " + rejects + " --max-rejects 5",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "rejected rows are listed in") {
		t.Errorf("the rejects file named twice:\n%s", errs)
	}
	if !strings.Contains(out, "--max-rejects 5: stopped once 5 rows were rejected") || !strings.Contains(summaryLine(out, "events"), "(stopped)") {
		t.Errorf("the summary does not say why the run stopped:\n%s", out)
	}
	var sum summaryFile
	if b, err := os.ReadFile(sumFile); err != nil || json.Unmarshal(b, &sum) != nil || sum.Status != statusStopped || sum.ExitCode != exitStopped || !strings.Contains(sum.Error, "--max-rejects 5") {
		t.Errorf("summary file: %+v (%v)", sum, err)
	}
	ctx := context.Background()
	n, err := db.Collection("events").CountDocuments(ctx, bson.D{})
	if err != nil || n != 54 {
		t.Errorf("events after the stop: %d documents (%v), want the 3 batches' 54", n, err)
	}
	if n, _ := db.Collection("notes").CountDocuments(ctx, bson.D{}); n != 0 {
		t.Errorf("notes after the stop: %d documents, want none", n)
	}
	code, out, errs = runCLI(t, "status", "--target", uri)
	if code != 0 || !strings.Contains(out, "ev") {
		t.Errorf("status: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("status after the stop:\n%s", out)

	// The resume: from the checkpoint, the rest of the rejects listed
	// after the first ones, each once.
	code, out, errs = runCLI(t, append(args, "--resume", "--max-rejects", "100")...)
	if code != exitRejected {
		t.Fatalf("resume: exit %d, want %d\n%s%s", code, exitRejected, out, errs)
	}
	ids = rejectedIDs(t, rejects)
	var want []int
	for i := 10; i <= 300; i += 10 {
		want = append(want, i)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("rejects file after the resume: %v, want every tenth id once", ids)
	}
	for coll, want := range map[string]int64{"events": 270, "notes": 200} {
		if n, err := db.Collection(coll).CountDocuments(ctx, bson.D{}); err != nil || n != want {
			t.Errorf("%s after the resume: %d documents (%v), want %d", coll, n, err, want)
		}
	}
	if code, out, errs := runCLI(t, "verify", "--mapping", mapping, "--source", src, "--target", uri); code != 1 || !strings.Contains(out+errs, "30") {
		// The 30 rejected rows are missing from the target: verify
		// says so (and nothing else).
		t.Logf("verify: exit %d\n%s%s", code, out, errs)
	}

	// No job, a directory: the same stop, without a resume command.
	// Its first batch of 20 rows holds 2 bad ones.
	code, _, errs = runCLI(t, "migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", t.TempDir(), "--max-rejects", "1", "--batch-size", "20")
	if code != exitStopped || !strings.Contains(errs, "stopped: 2 rows were rejected, --max-rejects 1; give --rejects FILE to list them") || strings.Contains(errs, "--resume") {
		t.Errorf("--max-rejects 1 without a job: exit %d\n%s", code, errs)
	}
	// A negative limit is a usage error.
	if code, _, errs := runCLI(t, "migrate", "--mapping", mapping, "--source", src, "--max-rejects", "-1"); code != exitUsage || !strings.Contains(errs, "--max-rejects -1: cannot be negative") {
		t.Errorf("--max-rejects -1: exit %d\n%s", code, errs)
	}
}

// TestProgressBarRealRun: a real migrate with --progress bar on a
// 50-column terminal (COLUMNS), rows rejected while the events bar is
// drawn: every warning is on a line of its own, each collection's bar is
// on the screen once, at 100%, and no bar line reaches the last column.
func TestProgressBarRealRun(t *testing.T) {
	src, mapping := manyRejectsDB(t)
	t.Setenv("COLUMNS", "50")
	term := newFakeTerm(50)
	var out strings.Builder
	code := run(context.Background(), []string{"migrate", "--progress", "bar", "--batch-size", "20", "--mapping", mapping, "--source", src, "--target", t.TempDir()}, &out, term)
	lines := term.screen()
	if code != exitRejected {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), strings.Join(lines, "\n"))
	}
	bars := map[string]int{}
	warnings := 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "denorm: warning: rejected "):
			warnings++
		case strings.HasPrefix(l, "denorm: "):
		case strings.HasPrefix(l, "events ") || strings.HasPrefix(l, "notes "):
			bars[strings.Fields(l)[0]]++
			if !strings.Contains(l, "100%") || utf8.RuneCountInString(l) >= 50 {
				t.Errorf("a bar's last line: %q", l)
			}
		default:
			t.Errorf("a line neither a record nor a bar (a record glued to a bar, or a wrapped line?): %q", l)
		}
	}
	if warnings != 20 || bars["events"] != 1 || bars["notes"] != 1 {
		t.Errorf("%d warnings (want 20), bars %v (want each once):\n%s", warnings, bars, strings.Join(lines, "\n"))
	}
	t.Logf("screen:\n%s", strings.Join(lines, "\n"))
}

// TestSyncMaxRejects: sync --method diff with --max-rejects 1 stops at
// the first batch with a rejected row (exit 5), what was applied saved;
// the next sync without the limit continues and ends with every good row
// written (exit 3, the rejects listed).
func TestSyncMaxRejects(t *testing.T) {
	src, mapping := manyRejectsDB(t)
	uri, db := testenv.MongoDB(t)
	rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
	args := []string{"sync", "--mapping", mapping, "--source", src, "--target", uri, "--job", "sj", "--method", "diff", "--once", "--batch-size", "20", "--rejects", rejects}
	code, out, errs := runCLI(t, append(args, "--max-rejects", "1")...)
	if code != exitStopped || !strings.Contains(errs, "stopped: 2 rows were rejected, --max-rejects 1; they are listed in "+rejects) || !strings.Contains(out, "stopped by --max-rejects 1") {
		t.Fatalf("exit %d, want %d and why it stopped:\n%s%s", code, exitStopped, out, errs)
	}
	if ids := rejectedIDs(t, rejects); !slices.Equal(ids, []int{10, 20}) {
		t.Errorf("rejects after the stop: %v, want [10 20]", ids)
	}
	ctx := context.Background()
	if n, _ := db.Collection("notes").CountDocuments(ctx, bson.D{}); n != 0 {
		t.Errorf("notes after the stop: %d documents, want none", n)
	}
	code, out, errs = runCLI(t, args...)
	if code != exitRejected {
		t.Fatalf("sync again: exit %d, want %d\n%s%s", code, exitRejected, out, errs)
	}
	for coll, want := range map[string]int64{"events": 270, "notes": 200} {
		if n, err := db.Collection(coll).CountDocuments(ctx, bson.D{}); err != nil || n != want {
			t.Errorf("%s after the second sync: %d documents (%v), want %d", coll, n, err, want)
		}
	}
	// A diff pass (the copy done) stops too: 30 rows are still rejected.
	code, out, errs = runCLI(t, append(args, "--max-rejects", "3")...)
	if code != exitStopped || !strings.Contains(errs, "--max-rejects 3; they are listed in "+rejects) || !strings.Contains(out, "stopped by --max-rejects 3: what was written is kept") {
		t.Errorf("a diff pass: exit %d, want %d and why it stopped:\n%s%s", code, exitStopped, out, errs)
	}
	t.Logf("the stop in a diff pass:\n%s\n%s", out, strings.Join(strings.Split(errs, "\n")[len(strings.Split(errs, "\n"))-3:], "\n"))
	if code, _, errs := runCLI(t, append(args, "--max-rejects", "-2")...); code != exitUsage || !strings.Contains(errs, "--max-rejects -2: cannot be negative") {
		t.Errorf("--max-rejects -2: exit %d\n%s", code, errs)
	}
}

// TestSyncLogicalMaxRejects: a logical sync with --max-rejects 1 stops
// at the batch holding a change it rejects (exit 5), the position before
// it saved: the next run receives the batch again and stops again, so
// nothing is skipped silently; without the limit the change is rejected
// and listed, the others applied (exit 3).
func TestSyncLogicalMaxRejects(t *testing.T) {
	src, mapping := manyRejectsDB(t)
	testenv.Exec(t, src, "UPDATE ev SET at = '2024-01-01 10:00+00'::timestamptz + id * interval '1 minute' WHERE id % 10 = 0")
	uri, db := testenv.MongoDB(t)
	rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
	jobName := syncJob(t, src)
	args := []string{"sync", "--mapping", mapping, "--source", src, "--target", uri, "--job", jobName, "--method", "logical", "--once", "--rejects", rejects}
	mustCLI(t, append(args, "-q")...)
	testenv.Exec(t, src, "UPDATE note SET body = 'changed' WHERE id = 1; UPDATE ev SET at = 'infinity' WHERE id = 10; UPDATE note SET body = 'changed' WHERE id = 2")
	for run := 1; run <= 2; run++ {
		code, out, errs := runCLI(t, append(args, "--max-rejects", "1")...)
		if code != exitStopped || !strings.Contains(errs, "stopped: 1 row was rejected, --max-rejects 1; they are listed in "+rejects) ||
			!strings.Contains(errs, "the changes not applied are received again by the next sync") || !strings.Contains(out, "stopped by --max-rejects 1: position ") {
			t.Fatalf("run %d: exit %d, want %d and why it stopped:\n%s%s", run, code, exitStopped, out, errs)
		}
		if ids := rejectedIDs(t, rejects); len(ids) != run || ids[run-1] != 10 {
			t.Errorf("run %d: rejects %v, want id 10 listed once per run", run, ids)
		}
		t.Logf("run %d:\n%s%s", run, out, errs)
	}
	code, out, errs := runCLI(t, args...)
	if code != exitRejected {
		t.Fatalf("without the limit: exit %d, want %d\n%s%s", code, exitRejected, out, errs)
	}
	ctx := context.Background()
	if n, err := db.Collection("notes").CountDocuments(ctx, bson.D{{Key: "body", Value: "changed"}}); err != nil || n != 2 {
		t.Errorf("notes changed: %d (%v), want 2", n, err)
	}
}
