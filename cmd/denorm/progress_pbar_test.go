package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/denorm/denorm/pipeline"
)

// barRun drives a bar-mode progress on a fake terminal width columns
// wide through one collection of rows rows (estimate est, 0: unknown),
// in batches of batch rows every 500 ms, stopping after stopAfter
// batches (0: to its end, done); it returns the screen and every byte
// written to the terminal.
func barRun(t *testing.T, width int, name string, est, rows, batch int64, stopAfter int) (lines []string, raw string) {
	t.Helper()
	term := newFakeTerm(width)
	var all bytes.Buffer
	p, clock := fakeBar(t, io.MultiWriter(term, &all), width)
	s := pipeline.Stats{Collection: name, Table: name, Estimate: est}
	for step := 1; ; step++ {
		*clock = clock.Add(500 * time.Millisecond)
		s.Elapsed += 500 * time.Millisecond
		s.Rows = min(s.Rows+batch, rows)
		s.Written = s.Rows
		s.Done = s.Rows == rows && stopAfter == 0
		p.update(s)
		if s.Done || step == stopAfter {
			break
		}
	}
	p.finish()
	fmt.Fprintln(p.g.stderr, "after")
	return term.screen(), all.String()
}

// TestProgressBarDrawnByProgressbar: the bar's frames are progressbar's
// ("\r", the line, ESC[0K; percent and bar after our fields), its last
// frame, at 100%, is written once (no second draw of a finished bar),
// and what follows starts on the next line.
func TestProgressBarDrawnByProgressbar(t *testing.T) {
	lines, raw := barRun(t, 80, "people", 10000, 10000, 1500, 0)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "people ") || lines[1] != "after" {
		t.Fatalf("screen:\n%s", strings.Join(lines, "\n"))
	}
	if n := strings.Count(raw, "100%"); n != 1 || strings.Count(raw, "done") != 1 {
		t.Errorf("the finished bar written %d times, want once:\n%q", n, raw)
	}
	frames := strings.Split(raw, "\r")[1:]
	for _, f := range frames[:len(frames)-1] {
		if !strings.HasSuffix(f, "\x1b[0K") {
			t.Errorf("a frame not progressbar's (ESC[0K at its end): %q", f)
		}
	}
	last := strings.TrimSuffix(strings.TrimSuffix(frames[len(frames)-1], "after\n"), "\n")
	if want := "people (10000/10000)  2857 docs/s       done 100% [#########################]  \x1b[0K"; last != want {
		t.Errorf("last frame:\n got %q\nwant %q", last, want)
	}
	if strings.TrimRight(strings.TrimSuffix(last, "\x1b[0K"), " ") != lines[0] {
		t.Errorf("the screen's line %q is not the last frame %q", lines[0], last)
	}
	t.Logf("%d frames; the last: %q", len(frames), last)
}

// TestProgressBarNoEstimate: with no estimate, progressbar's spinner
// and our fields (no percent, no bar); done, the line is kept once.
func TestProgressBarNoEstimate(t *testing.T) {
	for _, width := range []int{40, 80} {
		lines, raw := barRun(t, width, "events", 0, 7000, 1000, 0)
		if len(lines) != 2 || lines[1] != "after" {
			t.Fatalf("%d columns: screen:\n%s", width, strings.Join(lines, "\n"))
		}
		l := lines[0]
		if !strings.Contains(l, "events") || !strings.Contains(l, "done") || strings.Contains(l, "%") || utf8.RuneCountInString(l) >= width {
			t.Errorf("%d columns: the last line %q", width, l)
		}
		if n := strings.Count(raw, "done"); n != 1 {
			t.Errorf("%d columns: the finished line written %d times:\n%q", width, n, raw)
		}
		t.Logf("%d columns: %q", width, l)
	}
}

// TestProgressBarInterrupted: a collection that does not finish (an
// interrupt) keeps its bar as last drawn (progressbar's Exit), once,
// what follows on the next line.
func TestProgressBarInterrupted(t *testing.T) {
	lines, _ := barRun(t, 60, "people", 10000, 10000, 1500, 3)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "people ") || !strings.Contains(lines[0], " 45% [") || lines[1] != "after" {
		t.Errorf("screen:\n%s", strings.Join(lines, "\n"))
	}
	t.Logf("%q", lines[0])
}
