package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/pipeline"
)

// TestProgressLines: off a terminal, progress is a status line per
// collection at most every statusEvery (10 s) and one when it is done;
// -q shows none; "auto" is lines when stderr is not a terminal.
func TestProgressLines(t *testing.T) {
	var buf bytes.Buffer
	g := &globals{stdout: &bytes.Buffer{}, stderr: &buf}
	p := newProgress(g, "auto")
	if p.mode != "lines" {
		t.Fatalf("auto off a terminal: mode %q, want lines", p.mode)
	}
	s := pipeline.Stats{Collection: "people", Estimate: 100, Rows: 20, Elapsed: 2 * time.Second}
	p.update(s)
	if buf.Len() != 0 {
		t.Errorf("a status line before %s passed: %q", statusEvery, buf.String())
	}
	p.last = time.Now().Add(-statusEvery)
	p.update(s)
	if want := "people: running 20/100 docs, 10 docs/s, 0 failed, ETA 8s\n"; buf.String() != want {
		t.Errorf("status line after %s: %q, want %q", statusEvery, buf.String(), want)
	}
	buf.Reset()
	s.Rows, s.Elapsed, s.Done, s.Failed = 100, 4*time.Second, true, 1
	p.update(s)
	if want := "people: done 100/100 docs, 25 docs/s, 1 failed, ETA 0s\n"; buf.String() != want {
		t.Errorf("status line of a finished collection: %q, want %q", buf.String(), want)
	}

	buf.Reset()
	g.quiet = true
	q := newProgress(g, "lines")
	q.last = time.Now().Add(-statusEvery)
	q.update(s)
	q.finish()
	if buf.Len() != 0 {
		t.Errorf("-q printed progress: %q", buf.String())
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
	p.update(pipeline.Stats{Collection: "people", Estimate: 100, Rows: 40, Elapsed: time.Second})
	p.update(pipeline.Stats{Collection: "people", Estimate: 100, Rows: 100, Elapsed: 2 * time.Second, Done: true})
	p.update(pipeline.Stats{Collection: "posts", Estimate: 10, Rows: 10, Elapsed: time.Second, Done: true})
	p.finish()
	out := buf.String()
	for _, want := range []string{"people", "(40/100, ", "(100/100, ", "posts", "(10/10, ", "100%"} {
		if !strings.Contains(out, want) {
			t.Errorf("the bars lack %q: %q", want, out)
		}
	}
}
