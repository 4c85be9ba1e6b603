package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform/report"
)

// progress shows per-collection progress on stderr: a bar per collection
// on a terminal, a status line every statusEvery otherwise (a log record
// with --log-format json), and, in every mode but none, a line whenever a
// read or write has waited long (pipeline.Wait).
//
// Every figure is this run's: rates are this run's rows or documents by
// this run's time on the collection (no rate before rateAfter has
// passed), and after --resume what earlier runs did is shown apart. A
// bucket collection counts rows (the table's) and pages (the documents)
// separately.
type progress struct {
	g      *globals
	mode   string
	mu     sync.Mutex
	bar    *progressbar.ProgressBar
	coll   string
	last   time.Time
	waited map[string]time.Time
	now    func() time.Time
}

const (
	statusEvery = 10 * time.Second
	// waitEvery spaces the lines about one wait.
	waitEvery = 5 * time.Second
	// rateAfter: a rate over less time than this says nothing.
	rateAfter = time.Second
)

func newProgress(g *globals, mode string) *progress {
	if mode == "auto" {
		mode = "lines"
		if f, ok := g.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) && g.logFormat != logJSON {
			mode = "bar"
		}
	}
	if mode == "bar" && g.logFormat == logJSON {
		mode = "lines" // every stderr line is JSON
	}
	if g.quiet {
		mode = "none"
	}
	return &progress{g: g, mode: mode, last: time.Now(), waited: map[string]time.Time{}, now: time.Now}
}

// rate is n per second of elapsed, or -1 when elapsed is too short.
func rate(n int64, elapsed time.Duration) float64 {
	if elapsed < rateAfter {
		return -1
	}
	return float64(n) / elapsed.Seconds()
}

func rateText(r float64) string {
	if r < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", r)
}

// unit is what the collection's progress counts against its estimate:
// documents, or the rows of a bucket collection's table.
func unit(s pipeline.Stats) string {
	if s.Bucket {
		return "rows"
	}
	return "docs"
}

func (p *progress) update(s pipeline.Stats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mode {
	case "bar":
		if p.coll != s.Collection+"\x00"+s.Table {
			if p.bar != nil {
				_ = p.bar.Finish()
			}
			total := s.Estimate
			if total <= 0 {
				total = -1
			}
			p.bar = progressbar.NewOptions64(total,
				progressbar.OptionSetWriter(p.g.stderr),
				progressbar.OptionSetDescription(fmt.Sprintf("%-20s", s.Collection)),
				progressbar.OptionShowCount(),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.g.stderr) }),
			)
			p.coll = s.Collection + "\x00" + s.Table
		}
		if s.Estimate > 0 && s.Rows > s.Estimate {
			p.bar.ChangeMax64(s.Rows)
		}
		// The bar's own rate would count rows done before a resume as
		// done now: this run's rate is in the description. The count is
		// set first: Set64 is throttled, Describe draws at once, so the
		// line drawn shows the count and the rate of the same moment.
		_ = p.bar.Set64(s.Rows)
		p.bar.Describe(fmt.Sprintf("%-20s %s %s/s", s.Collection, rateText(rate(s.RunRows(), s.Elapsed)), unit(s)))
		if s.Done {
			_ = p.bar.Finish()
			p.bar, p.coll = nil, ""
		}
	case "lines":
		if s.Done || p.now().Sub(p.last) >= statusEvery {
			p.last = p.now()
			p.line(s)
		}
	}
}

// line writes one status line (or record) about s.
func (p *progress) line(s pipeline.Stats) {
	r := rate(s.RunRows(), s.Elapsed)
	total, eta := "?", "?"
	if s.Estimate > 0 {
		total = fmt.Sprint(s.Estimate)
		if r > 0 && s.Estimate > s.Rows {
			eta = (time.Duration(float64(s.Estimate-s.Rows)/r) * time.Second).Round(time.Second).String()
		}
	}
	state := "running"
	if s.Done {
		state, eta = "done", "0s"
	}
	if p.g.logFormat == logJSON {
		attrs := []any{"collection", s.Collection, "state", state, "rows", s.Rows, "documents", s.Written, "failed", s.Failed,
			"rowsPerSecond", max(r, 0), "docsPerSecond", max(rate(s.RunWritten(), s.Elapsed), 0), "elapsed", s.Elapsed.Seconds()}
		if s.Estimate > 0 {
			attrs = append(attrs, "estimate", s.Estimate)
		}
		if s.PriorRows > 0 {
			attrs = append(attrs, "rowsBeforeThisRun", s.PriorRows, "documentsBeforeThisRun", s.PriorWritten)
		}
		if eta != "?" {
			attrs = append(attrs, "eta", eta)
		}
		p.g.logger().Info("progress", attrs...)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %d/%s %s", s.Collection, state, s.Rows, total, unit(s))
	if s.Bucket {
		fmt.Fprintf(&b, " in %s", report.Plural(s.Written, "page", "pages"))
	}
	fmt.Fprintf(&b, ", %s %s/s", rateText(r), unit(s))
	if s.PriorRows > 0 {
		fmt.Fprintf(&b, " (this run: %d %s; %d before it)", s.RunRows(), unit(s), s.PriorRows)
	}
	fmt.Fprintf(&b, ", %d failed, ETA %s", s.Failed, eta)
	fmt.Fprintln(p.g.stderr, b.String())
}

// waiting tells of a read or write that takes long, every waitEvery at
// most for the same collection and side.
func (p *progress) waiting(w pipeline.Wait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == "none" {
		return
	}
	key := w.Collection + "\x00" + w.For
	if t, ok := p.waited[key]; ok && p.now().Sub(t) < waitEvery {
		return
	}
	p.waited[key] = p.now()
	secs := w.Since.Round(time.Second)
	if p.g.logFormat == logJSON {
		attrs := []any{"collection", w.Collection, "for", w.For, "seconds", int(secs.Seconds()), "attempt", w.Attempt}
		if w.LastErr != nil {
			attrs = append(attrs, "lastError", w.LastErr.Error())
		}
		p.g.logger().Warn("waiting for "+w.For, attrs...)
		return
	}
	msg := fmt.Sprintf("%s: waiting for %s: %s, attempt %d", w.Collection, w.For, secs, w.Attempt)
	if w.LastErr != nil {
		msg += fmt.Sprintf(" (last error: %v)", w.LastErr)
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("%-20s waiting for %s %s", w.Collection, w.For, secs))
		return
	}
	fmt.Fprintln(p.g.stderr, msg)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Exit()
		fmt.Fprintln(p.g.stderr)
		p.bar = nil
	}
}
