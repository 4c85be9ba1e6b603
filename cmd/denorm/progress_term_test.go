package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
)

// fakeTerm is a terminal of a fixed width: it keeps the screen's lines
// as a terminal shows them (carriage return, line feed, ESC[K erasing to
// the end of the line), a line longer than the width wrapping to the
// next (screen joins it again).
type fakeTerm struct {
	width int
	lines [][]rune
	cont  map[int]bool // rows that continue the one before (wrapped)
	row   int
	col   int
	esc   []byte
}

func newFakeTerm(width int) *fakeTerm {
	return &fakeTerm{width: width, lines: [][]rune{nil}, cont: map[int]bool{}}
}

func (t *fakeTerm) Write(p []byte) (int, error) {
	s := string(p)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		if t.esc != nil {
			t.esc = append(t.esc, string(r)...)
			if r >= '@' && r <= '~' && len(t.esc) > 1 {
				if string(t.esc) == "[K" || string(t.esc) == "[0K" {
					if t.col < len(t.lines[t.row]) {
						t.lines[t.row] = t.lines[t.row][:t.col]
					}
				}
				t.esc = nil
			}
			continue
		}
		switch r {
		case '\x1b':
			t.esc = []byte{}
		case '\r':
			t.col = 0
		case '\n':
			t.newline()
		default:
			if t.col == t.width {
				t.newline()
				t.cont[t.row] = true
			}
			line := t.lines[t.row]
			for len(line) <= t.col {
				line = append(line, ' ')
			}
			line[t.col] = r
			t.lines[t.row] = line
			t.col++
		}
	}
	return len(p), nil
}

func (t *fakeTerm) newline() {
	t.row, t.col = t.row+1, 0
	if t.row == len(t.lines) {
		t.lines = append(t.lines, nil)
	}
}

// screen is the terminal's lines, blanks at their ends trimmed, a line
// that wrapped joined again.
func (t *fakeTerm) screen() []string {
	var out []string
	for i, l := range t.lines {
		if t.cont[i] && len(out) > 0 {
			out[len(out)-1] += strings.TrimRight(string(l), " ")
			continue
		}
		out = append(out, strings.TrimRight(string(l), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// testPlan is a plan of collections with root tables of those row
// estimates: what progress.expect reads.
func testPlan(names []string, estimates []int64) *mappings.Plan {
	p := &mappings.Plan{}
	for i, n := range names {
		p.Collections = append(p.Collections, &mappings.CollectionPlan{Name: n, Root: &mappings.Node{Table: &mappings.Table{Name: n + "_t", Estimate: estimates[i]}}})
	}
	return p
}

// TestProgressBarTerminal drives bars on terminals 40, 60, 80 and 120
// columns wide through a run of three collections (one with a long
// name), with a warning logged and a wait told while a bar is drawn: no
// line is ever wider than the terminal (nothing wraps), each
// collection's bar is on the screen once, at 100% when done; the
// warning has its own line, the bar being drawn again below it; every
// frame of a bar is as wide as the first (nothing moves), and the ETA of
// all the collections shows from 60 columns on.
func TestProgressBarTerminal(t *testing.T) {
	names := []string{"customers", "customerAddressHistoryEntries", "rentals"}
	ests := []int64{6000, 20000, 16044}
	for _, width := range []int{40, 60, 80, 120} {
		term := newFakeTerm(width)
		p, clock := fakeBar(t, term, width)
		p.expect(testPlan(names, ests), 0)
		var frames []string
		for i, n := range names {
			s := pipeline.Stats{Collection: n, Table: n + "_t", Estimate: ests[i]}
			for step := int64(0); ; step++ {
				*clock = clock.Add(500 * time.Millisecond)
				s.Elapsed += 500 * time.Millisecond
				// Uneven batches: 1,000 rows, then 3,000.
				s.Rows = min(s.Rows+1000+2000*(step%2), ests[i])
				s.Written = s.Rows
				s.Done = s.Rows == ests[i]
				p.update(s)
				if p.bar != nil && p.bar.collection == n {
					frames = append(frames, p.bar.render(width))
				}
				if i == 1 && step == 3 {
					p.g.logger().Warn("rejected", "collection", n)
					p.waiting(pipeline.Wait{Collection: n, For: "target", Since: 4 * time.Second, Attempt: 2})
				}
				if s.Done {
					break
				}
			}
		}
		p.finish()
		lines := term.screen()
		// A line that wrapped is one line of the screen again: a bar that
		// wrapped is longer than the terminal here. (A log record is as
		// long as it is: only progress must fit.)
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n >= width && !strings.HasPrefix(l, "denorm: ") {
				t.Errorf("%d columns: a line of %d: %q", width, n, l)
			}
		}
		for _, n := range names[:1] {
			count := 0
			for _, l := range lines {
				if strings.HasPrefix(l, n+" ") {
					count++
					if !strings.Contains(l, "100%") || !strings.Contains(l, "done") {
						t.Errorf("%d columns: %s's line is not its last frame: %q", width, n, l)
					}
				}
			}
			if count != 1 {
				t.Errorf("%d columns: %s's bar is on the screen %d times:\n%s", width, n, count, strings.Join(lines, "\n"))
			}
		}
		if len(lines) != 4 || !strings.HasPrefix(lines[1], "denorm: warning: rejected collection=customerAddressHistoryEntries") {
			t.Errorf("%d columns: want the first bar, the warning on a line of its own, then the other bars:\n%s", width, strings.Join(lines, "\n"))
		}
		if !strings.Contains(lines[3], "rentals") || !strings.Contains(lines[2], "100%") {
			t.Errorf("%d columns: the last bars:\n%s", width, strings.Join(lines, "\n"))
		}
		// Every frame of a collection's bar has the width of its first.
		widths := map[string]int{}
		for _, f := range frames {
			key := f[:8]
			if w, ok := widths[key]; ok && w != utf8.RuneCountInString(f) {
				t.Errorf("%d columns: a frame of %d columns after %d: %q", width, utf8.RuneCountInString(f), w, f)
			}
			widths[key] = utf8.RuneCountInString(f)
		}
		if width >= 60 && !strings.Contains(strings.Join(frames, "\n"), "all ") {
			t.Errorf("%d columns: no ETA of all the collections:\n%s", width, strings.Join(frames, "\n"))
		}
		t.Logf("%d columns:\n%s\n(a frame: %q)", width, strings.Join(lines, "\n"), frames[len(frames)/2])
	}
}

// TestProgressRateSmoothed: batches alternating 1,000 and 3,000 rows a
// second (2,000 on average) give a bar rate that stays near 2,000
// rather than jumping between 1,000 and 3,000.
func TestProgressRateSmoothed(t *testing.T) {
	b := &bar{rate: -1}
	s := pipeline.Stats{Estimate: 1 << 40}
	var seen []float64
	for step := 0; step < 40; step++ {
		s.Elapsed += time.Second
		s.Rows += int64(1000 + 2000*(step%2))
		b.smooth(s)
		if step >= 10 {
			seen = append(seen, b.rate)
		}
	}
	for _, r := range seen {
		if r < 1700 || r > 2300 {
			t.Errorf("smoothed rate %0.f: want it within 1700..2300 (batches of 1000 and 3000 rows a second): %v", r, seen)
			break
		}
	}
	// The last frame's rate is the summary's.
	s.Done, s.Elapsed, s.Rows = true, 500*time.Millisecond, 1288
	b.smooth(s)
	if b.rate != 2576 {
		t.Errorf("the last frame's rate = %v, want the summary's 2576", b.rate)
	}
}

// TestProgressOverallETA: the ETA of all the collections counts the
// rows left in every collection not done, at this run's rate over the
// collections so far; in --progress lines it follows each line.
func TestProgressOverallETA(t *testing.T) {
	now := time.Now()
	p, buf := testProgress(logText, &now)
	p.expect(testPlan([]string{"a", "b", "c"}, []int64{1000, 3000, 6000}), 0)
	p.update(pipeline.Stats{Collection: "a", Table: "a_t", Estimate: 1000, Rows: 1000, Written: 1000, Elapsed: 10 * time.Second, Done: true})
	// 1000 rows in 10 s, 100/s; left: 3000 + 6000 rows: 90 s.
	if d, ok := p.etaAll(); !ok || d != 90*time.Second {
		t.Errorf("ETA of all = %s, %v; want 1m30s", d, ok)
	}
	buf.Reset()
	now = now.Add(statusEvery)
	p.update(pipeline.Stats{Collection: "b", Table: "b_t", Estimate: 3000, Rows: 1000, Written: 1000, Elapsed: 10 * time.Second})
	// 2000 rows in 20 s; left 2000 + 6000: 80 s.
	if got, want := buf.String(), "b: running 1000/3000 docs, 100 docs/s, 0 failed, ETA 20s, all collections 1m20s\n"; got != want {
		t.Errorf("line:\n got %q\nwant %q", got, want)
	}
	// A resumed run: a collection done before reports nothing; the
	// next one's first figures end it.
	p.expect(testPlan([]string{"a", "b", "c"}, []int64{1000, 3000, 6000}), 0)
	p.update(pipeline.Stats{Collection: "b", Table: "b_t", Estimate: 3000, Rows: 2000, PriorRows: 1000, Written: 2000, Elapsed: 10 * time.Second})
	if d, ok := p.etaAll(); !ok || d != 70*time.Second {
		t.Errorf("resumed: ETA of all = %s, %v; want 1m10s (1000 + 6000 rows at 100/s)", d, ok)
	}
}

// TestProgressJSONRate: a collection done in half a second, with 1,288
// documents, has the summary's rate in its last JSON record (2576/s),
// not 0; a rate not known yet is left out of a record, not given as 0.
func TestProgressJSONRate(t *testing.T) {
	now := time.Now()
	p, buf := testProgress(logJSON, &now)
	p.update(pipeline.Stats{Collection: "people", Estimate: 1288, Rows: 1288, Written: 1288, Elapsed: 500 * time.Millisecond, Done: true})
	now = now.Add(statusEvery)
	p.update(pipeline.Stats{Collection: "posts", Estimate: 5000, Rows: 100, Written: 100, Elapsed: 500 * time.Millisecond})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 records:\n%s", buf)
	}
	var done, running map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &done); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &running); err != nil {
		t.Fatal(err)
	}
	if done["docsPerSecond"] != 2576.0 || done["rowsPerSecond"] != 2576.0 {
		t.Errorf("done record: %v; want 2576 documents and rows a second", done)
	}
	if want := summaryRate(1288, 500*time.Millisecond); want != 2576 {
		t.Errorf("the summary's rate = %v", want)
	}
	if _, ok := running["docsPerSecond"]; ok {
		t.Errorf("a rate after 500 ms: %v", running)
	}
}

// TestProgressJSONRateMatchesSummary runs migrate with --log-format json
// and --summary-file: for each collection, the rate of its last progress
// record is the summary file's (within 1%).
func TestProgressJSONRateMatchesSummary(t *testing.T) {
	src := personsDB(t, 3000)
	uri, _ := testenv.MongoDB(t)
	sum := filepath.Join(t.TempDir(), "summary.json")
	code, out, errs := runCLI(t, "--log-format", "json", "migrate", "--progress", "lines", "--mapping", example(t, "person"), "--source", src, "--target", uri, "--drop", "--summary-file", sum, "--batch-size", "200")
	if code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	last := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("not JSON: %s", l)
		}
		if rec["msg"] == "progress" {
			last[rec["collection"].(string)] = rec
		}
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	var f summaryFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Collections) == 0 {
		t.Fatalf("no collections in the summary:\n%s", b)
	}
	for _, c := range f.Collections {
		rec := last[c.Collection]
		if rec == nil || rec["state"] != "done" {
			t.Errorf("%s: last progress record %v", c.Collection, rec)
			continue
		}
		got, _ := rec["docsPerSecond"].(float64)
		if c.DocsPerSecond <= 0 || got < c.DocsPerSecond*0.99 || got > c.DocsPerSecond*1.01 {
			t.Errorf("%s: last progress record %v docs/s, summary %v", c.Collection, got, c.DocsPerSecond)
		}
		t.Logf("%s: progress %.0f docs/s, summary %.0f docs/s (%d documents in %.3fs)", c.Collection, got, c.DocsPerSecond, c.Run.Documents, c.ElapsedSeconds)
	}
}

// fakeBar is a progress bar of the given width drawn on w, its clock
// at 2026-01-01 until the caller moves it.
func fakeBar(t *testing.T, w io.Writer, width int) (*progress, *time.Time) {
	t.Helper()
	g := &globals{stdout: &strings.Builder{}, stderr: newConsole(w), logFormat: logText}
	if err := g.setLogger(); err != nil {
		t.Fatal(err)
	}
	p := newProgress(g, "bar")
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { return clock }
	p.width = func() int { return width }
	return p, &clock
}
