package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/pipeline"
)

// testProgress is a lines-mode progress writing to a buffer, its clock
// at now.
func testProgress(format string, now *time.Time) (*progress, *bytes.Buffer) {
	var buf bytes.Buffer
	g := &globals{stderr: &buf, stdout: &buf, logFormat: format}
	_ = g.setLogger()
	p := newProgress(g, "lines")
	p.now = func() time.Time { return *now }
	p.last = *now
	return p, &buf
}

// TestProgressLines checks the status lines of --progress lines: rates
// are this run's (none on a first frame, none inflated by rows done
// before a resume), a bucket collection counts rows and pages apart, and
// a long wait is told.
func TestProgressLines(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p, buf := testProgress(logText, &now)
	step := func(d time.Duration, s pipeline.Stats) string {
		now = now.Add(d)
		buf.Reset()
		p.update(s)
		return buf.String()
	}
	// A first frame after 10 ms: no line yet (every 10 s), and the
	// finished collection's line has no rate over so short a time.
	if got := step(10*time.Millisecond, pipeline.Stats{Collection: "people", Estimate: 2002, Rows: 1000, Written: 1000, Elapsed: 10 * time.Millisecond}); got != "" {
		t.Errorf("a line before statusEvery: %q", got)
	}
	if got, want := step(10*time.Millisecond, pipeline.Stats{Collection: "people", Estimate: 2002, Rows: 2002, Written: 2002, Elapsed: 20 * time.Millisecond, Done: true}),
		"people: done 2002/2002 docs, - docs/s, 0 failed, ETA 0s\n"; got != want {
		t.Errorf("done after 20 ms:\n got %q\nwant %q", got, want)
	}
	// Every 10 s a line, with this run's rate and the ETA from it.
	if got, want := step(10*time.Second, pipeline.Stats{Collection: "people", Estimate: 10000, Rows: 4000, Written: 4000, Elapsed: 10 * time.Second}),
		"people: running 4000/10000 docs, 400 docs/s, 0 failed, ETA 15s\n"; got != want {
		t.Errorf("running:\n got %q\nwant %q", got, want)
	}
	// Resumed with 6000 rows done before: the rate counts this run's 2000.
	if got, want := step(10*time.Second, pipeline.Stats{Collection: "people", Estimate: 10000, Rows: 8000, Written: 8000, PriorRows: 6000, PriorWritten: 6000, Elapsed: 10 * time.Second}),
		"people: running 8000/10000 docs, 200 docs/s (this run: 2000 docs; 6000 before it), 0 failed, ETA 10s\n"; got != want {
		t.Errorf("resumed:\n got %q\nwant %q", got, want)
	}
	// A bucket collection: rows of the table, pages written.
	if got, want := step(10*time.Second, pipeline.Stats{Collection: "comments", Bucket: true, Estimate: 1000, Rows: 500, Written: 5, Failed: 1, Elapsed: 2 * time.Second}),
		"comments: running 500/1000 rows in 5 pages, 250 rows/s, 1 failed, ETA 2s\n"; got != want {
		t.Errorf("bucket:\n got %q\nwant %q", got, want)
	}
	if got, want := step(0, pipeline.Stats{Collection: "comments", Bucket: true, Rows: 1, Written: 1, Elapsed: 2 * time.Second, Done: true}),
		"comments: done 1/? rows in 1 page, 0 rows/s, 0 failed, ETA 0s\n"; got != want {
		t.Errorf("one page:\n got %q\nwant %q", got, want)
	}

	// Waits: told at once, then at most every 5 s.
	buf.Reset()
	p.waiting(pipeline.Wait{Collection: "people", For: "target", Since: 12 * time.Second, Attempt: 3, LastErr: errors.New("connection refused")})
	p.waiting(pipeline.Wait{Collection: "people", For: "target", Since: 13 * time.Second, Attempt: 3})
	if got, want := buf.String(), "people: waiting for target: 12s, attempt 3 (last error: connection refused)\n"; got != want {
		t.Errorf("wait:\n got %q\nwant %q", got, want)
	}
	now = now.Add(5 * time.Second)
	buf.Reset()
	p.waiting(pipeline.Wait{Collection: "people", For: "target", Since: 17 * time.Second, Attempt: 4})
	if got := buf.String(); got != "people: waiting for target: 17s, attempt 4\n" {
		t.Errorf("wait 5 s later: %q", got)
	}
}

// TestProgressJSON: in json log format progress lines and waits are
// records with their figures as attributes.
func TestProgressJSON(t *testing.T) {
	now := time.Now()
	p, buf := testProgress(logJSON, &now)
	p.update(pipeline.Stats{Collection: "comments", Bucket: true, Estimate: 1000, Rows: 1000, Written: 10, PriorRows: 400, PriorWritten: 4, Elapsed: 2 * time.Second, Done: true})
	p.waiting(pipeline.Wait{Collection: "comments", For: "source", Since: 4 * time.Second, Attempt: 1})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 records, got:\n%s", buf)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["msg"] != "progress" || rec["state"] != "done" || rec["rows"] != 1000.0 || rec["documents"] != 10.0 || rec["rowsPerSecond"] != 300.0 || rec["rowsBeforeThisRun"] != 400.0 {
		t.Errorf("progress record: %v", rec)
	}
	if err := json.Unmarshal([]byte(lines[1]), &rec); err != nil || rec["msg"] != "waiting for source" || rec["level"] != "WARN" || rec["seconds"] != 4.0 {
		t.Errorf("wait record: %v (%v)", rec, err)
	}
}

// TestSummaryTable: the summary fits 80 columns for usual names; after a
// resume it gives this run's work and the job's totals apart, and says
// what a bucket collection's documents are.
func TestSummaryTable(t *testing.T) {
	var buf bytes.Buffer
	g := &globals{stdout: &buf, stderr: &buf, logFormat: logText}
	s := &runSummary{Target: "mongodb://h/db", Job: "nightly", Elapsed: 90 * time.Second, Stats: []pipeline.Stats{
		{Collection: "customers", Table: "customer", Rows: 599, Written: 599, PriorRows: 599, PriorWritten: 599, Done: true},
		{Collection: "rentals", Table: "rental", Bucket: true, Rows: 16044, Written: 838, PriorRows: 6000, PriorWritten: 300, Elapsed: 80 * time.Second, Done: true},
		{Collection: "payments", Table: "payment", Bucket: true, Rows: 100, Written: 4, Elapsed: 9 * time.Second},
	}, Indexes: []pipeline.IndexesCreated{{Collection: "rentals", Indexes: []string{"customerId_1_page_1"}, Elapsed: 1500 * time.Millisecond}}}
	printSummary(g, s)
	out := buf.String()
	want := `COLLECTION  TABLE      ROWS  DOCS  FAILED   TIME  DOCS/S
customers   customer      0     0       0     0s       -  (done before)
rentals     rental    10044   538       0  1m20s       7
payments    payment     100     4       0     9s       0  (interrupted)
TOTAL                 10144   542       0  1m30s       6
`
	if !strings.HasPrefix(out, want) {
		t.Errorf("summary table:\n%s\nwant it to begin with:\n%s", out, want)
	}
	for _, l := range strings.Split(out, "\n") {
		if len(l) > 80 {
			t.Errorf("line longer than 80 columns (%d): %s", len(l), l)
		}
	}
	flat := strings.ReplaceAll(out, "\n  ", " ")
	for _, w := range []string{
		"bucket collections count pages as documents (rentals: 538 pages of 10044 rows; payments: 4 pages of 100 rows)",
		"job nightly in all, with the runs before this one: 16743 rows read, 1441 documents written, 0 failed",
		"indexes of rentals: customerId_1_page_1 (1.5s)",
	} {
		if !strings.Contains(flat, w) {
			t.Errorf("summary lacks %q:\n%s", w, out)
		}
	}
}

// TestSmallThings: the default target directory is ignored by git, and
// counts of one read as English.
func TestSmallThings(t *testing.T) {
	b, err := os.ReadFile(repoPath(t, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n"+defaultTarget+"/\n") {
		t.Errorf(".gitignore does not ignore %s/", defaultTarget)
	}
	code, out, errs := runCLI(t, "validate", "--mapping", example(t, "person"))
	if code != 0 || !strings.Contains(out, "valid (1 collection);") {
		t.Errorf("validate of a one-collection mapping: exit %d\n%s%s", code, out, errs)
	}
	if got := (rejectedError{1}).Error(); got != "1 row was rejected" {
		t.Errorf("rejectedError{1} = %q", got)
	}
	if got := (differentError{docs: 1, refs: 1}).Error(); got != "the target differs from the source: 1 document, and 1 dangling reference" {
		t.Errorf("differentError = %q", got)
	}
}

// TestResumeHintSource: the command a resume hint gives names the source
// as it was given: a URL without a password as it is, DENORM_SOURCE as
// "$DENORM_SOURCE", and nothing when the PG* variables named it (they
// will again).
func TestResumeHintSource(t *testing.T) {
	for _, c := range []struct {
		name, source string
		flag         bool
		want         string
	}{
		{"flag", "postgres://h/db", true, "denorm migrate --mapping m.yaml --source postgres://h/db --target out --job j --resume"},
		{"DENORM_SOURCE", "postgres://u:pw@h/db", false, `denorm migrate --mapping m.yaml --source "$DENORM_SOURCE" --target out --job j --resume`},
		{"PG* variables", "", false, "denorm migrate --mapping m.yaml --target out --job j --resume"},
	} {
		o := &migrateOptions{mapping: "m.yaml", source: c.source, sourceFlag: c.flag, target: "out", batchSize: 1000, jobs: jobOptions{job: "j"}}
		if got := commandLine(o, "--resume"); got != c.want {
			t.Errorf("%s: %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestProgressStreams: migrate's progress goes to stderr, its summary to
// stdout, and -q shows no progress.
func TestProgressStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := seedDB(t)
	base := []string{"migrate", "--mapping", example(t, "blog"), "--source", src}
	code, out, errs := runCLI(t, append(base, "--progress", "lines", "--target", t.TempDir())...)
	if code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	for _, c := range []string{"posts", "comments"} {
		if !strings.Contains(errs, c+": done ") || strings.Contains(out, c+": done ") {
			t.Errorf("no status line for %s on stderr (and only there):\nstdout:\n%s\nstderr:\n%s", c, out, errs)
		}
		if summaryLine(out, c) == "" {
			t.Errorf("no summary row for %s on stdout:\n%s", c, out)
		}
	}
	code, out, errs = runCLI(t, append(base, "-q", "--target", t.TempDir())...)
	// (Warnings, such as the superuser role's, still show with -q.)
	if code != 0 || strings.Contains(errs, ": done ") || strings.Contains(errs, "docs/s") {
		t.Errorf("migrate -q: exit %d, stderr %q; want 0 and no progress", code, errs)
	}
	if summaryLine(out, "posts") == "" {
		t.Errorf("migrate -q: no summary on stdout:\n%s", out)
	}
}

// TestProgressBar: --progress bar draws a bar per collection, counting
// its documents against the catalog's estimate.
func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&globals{stdout: &bytes.Buffer{}, stderr: &buf}, "bar")
	p.update(pipeline.Stats{Collection: "people", Estimate: 100, Rows: 0})
	time.Sleep(150 * time.Millisecond) // the bar redraws at most every 100 ms
	p.update(pipeline.Stats{Collection: "people", Estimate: 100, Rows: 40, Written: 40, Elapsed: time.Second})
	p.update(pipeline.Stats{Collection: "people", Estimate: 100, Rows: 100, Written: 100, Elapsed: 2 * time.Second, Done: true})
	p.update(pipeline.Stats{Collection: "posts", Estimate: 10, Rows: 10, Written: 10, Elapsed: time.Second, Done: true})
	p.finish()
	out := buf.String()
	for _, want := range []string{"people", "(40/100)", "(100/100)", "posts", "(10/10)", "100%"} {
		if !strings.Contains(out, want) {
			t.Errorf("the bars lack %q: %q", want, out)
		}
	}
}
