package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/denorm/denorm/pipeline"
)

// progress shows per-collection progress on stderr: a bar per collection on
// a terminal, a status line every statusEvery otherwise.
type progress struct {
	g      *globals
	mode   string
	mu     sync.Mutex
	bar    *progressbar.ProgressBar
	coll   string
	last   time.Time
	lastSt pipeline.Stats
}

const statusEvery = 10 * time.Second

func newProgress(g *globals, mode string) *progress {
	if mode == "auto" {
		mode = "lines"
		if f, ok := g.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = "bar"
		}
	}
	if g.quiet {
		mode = "none"
	}
	return &progress{g: g, mode: mode, last: time.Now()}
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
				progressbar.OptionShowIts(),
				progressbar.OptionSetItsString("docs"),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.g.stderr) }),
			)
			p.coll = s.Collection + "\x00" + s.Table
		}
		if s.Estimate > 0 && s.Rows > s.Estimate {
			p.bar.ChangeMax64(s.Rows)
		}
		_ = p.bar.Set64(s.Rows)
		if s.Done {
			_ = p.bar.Finish()
			p.bar, p.coll = nil, ""
		}
	case "lines":
		if s.Done || time.Since(p.last) >= statusEvery {
			p.last = time.Now()
			p.line(s)
		}
	}
	p.lastSt = s
}

func (p *progress) line(s pipeline.Stats) {
	rate := 0.0
	if s.Elapsed > 0 {
		rate = float64(s.Rows) / s.Elapsed.Seconds()
	}
	total, eta := "?", "?"
	if s.Estimate > 0 {
		total = fmt.Sprint(s.Estimate)
		if rate > 0 && s.Estimate > s.Rows {
			eta = (time.Duration(float64(s.Estimate-s.Rows)/rate) * time.Second).Round(time.Second).String()
		}
	}
	state := "running"
	if s.Done {
		state, eta = "done", "0s"
	}
	fmt.Fprintf(p.g.stderr, "%s: %s %d/%s docs, %.0f docs/s, %d failed, ETA %s\n", s.Collection, state, s.Rows, total, rate, s.Failed, eta)
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
