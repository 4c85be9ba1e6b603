package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"

	"github.com/denorm/denorm/mappings"
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
// separately. A collection's last figures (done) are the summary's: the
// same rate, from the same counts and time.
//
// Once the run's collections are known (expect), an ETA for all of them
// follows each collection's: the rows left in every collection (their
// estimates) at this run's rate over all collections so far.
type progress struct {
	g      *globals
	con    *console
	mode   string
	mu     sync.Mutex
	last   time.Time
	waited map[string]time.Time
	now    func() time.Time
	// width is the terminal's width in columns (the bar fits in it).
	width func() int

	bar *bar
	// entries are the run's collections in the order they run, with
	// what each has done (expect; nil: unknown).
	entries []*entryProgress
}

// entryProgress is one collection entry's part of the overall ETA.
type entryProgress struct {
	collection, table string
	estimate          int64
	rows, runRows     int64
	elapsed           time.Duration
	seen, done        bool
}

const (
	statusEvery = 10 * time.Second
	// waitEvery spaces the lines about one wait.
	waitEvery = 5 * time.Second
	// rateAfter: a rate over less time than this says nothing.
	rateAfter = time.Second
	// drawEvery: a bar is redrawn at most this often (its last frame
	// and a new bar at once).
	drawEvery = 100 * time.Millisecond
	// smoothing is the time constant of a bar's rate: an exponentially
	// weighted mean of the rate between frames at least rateAfter apart,
	// so that one slow or fast batch does not make it jump.
	smoothing = 5 * time.Second
)

func newProgress(g *globals, mode string) *progress {
	con := newConsole(g.stderr)
	if mode == "auto" {
		mode = "lines"
		if _, ok := con.terminal(); ok && g.logFormat != logJSON {
			mode = "bar"
		}
	}
	if mode == "bar" && g.logFormat == logJSON {
		mode = "lines" // every stderr line is JSON
	}
	if g.quiet {
		mode = "none"
	}
	return &progress{g: g, con: con, mode: mode, last: time.Now(), waited: map[string]time.Time{}, now: time.Now, width: con.width}
}

// expect tells the run's collections, in the order they run, for the
// ETA over all of them; limit is --limit (0: none).
func (p *progress) expect(plan *mappings.Plan, limit int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries = nil
	for _, cp := range plan.Collections {
		est := cp.Root.Table.Estimate
		if limit > 0 && (est < 0 || est > int64(limit)) {
			est = int64(limit)
		}
		p.entries = append(p.entries, &entryProgress{collection: cp.Name, table: cp.Root.Table.Name, estimate: est})
	}
}

// rate is n per second of elapsed, or -1 when elapsed is too short.
func rate(n int64, elapsed time.Duration) float64 {
	if elapsed < rateAfter {
		return -1
	}
	return float64(n) / elapsed.Seconds()
}

// statsRate is the rate of s's rows: over the collection's whole time
// once it is done, as the summary gives it (summaryRate), before that
// once rateAfter has passed.
func statsRate(n int64, s pipeline.Stats) float64 {
	if s.Done {
		return summaryRate(n, s.Elapsed)
	}
	return rate(n, s.Elapsed)
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

// note records s in the overall ETA's entries: the entries before s's
// have ended (they run in order).
func (p *progress) note(s pipeline.Stats) {
	for i, e := range p.entries {
		if e.collection != s.Collection || e.table != s.Table || (e.done && !s.Done) {
			continue
		}
		for _, before := range p.entries[:i] {
			before.done = true
		}
		e.rows, e.runRows, e.elapsed, e.seen, e.done = s.Rows, s.RunRows(), s.Elapsed, true, s.Done
		return
	}
}

// etaAll is the time left for every collection of the run: the rows
// left by the estimates at this run's rate over all its collections;
// false when not known (one collection, no estimates, no rate yet).
func (p *progress) etaAll() (time.Duration, bool) {
	if len(p.entries) < 2 {
		return 0, false
	}
	var left, runRows int64
	var elapsed time.Duration
	for _, e := range p.entries {
		if e.seen {
			runRows, elapsed = runRows+e.runRows, elapsed+e.elapsed
		}
		if e.done {
			continue
		}
		if e.estimate < 0 {
			return 0, false
		}
		left += max(e.estimate-e.rows, 0)
	}
	r := rate(runRows, elapsed)
	if r <= 0 {
		return 0, false
	}
	return time.Duration(float64(left)/r) * time.Second, true
}

func (p *progress) update(s pipeline.Stats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.note(s)
	switch p.mode {
	case "bar":
		p.drawBar(s)
	case "lines":
		if s.Done || p.now().Sub(p.last) >= statusEvery {
			p.last = p.now()
			p.line(s)
		}
	}
}

// eta is the time left for s at rate r.
func eta(s pipeline.Stats, r float64) (time.Duration, bool) {
	if s.Done {
		return 0, true
	}
	if s.Estimate <= 0 || r <= 0 {
		return 0, false
	}
	return time.Duration(float64(max(s.Estimate-s.Rows, 0))/r) * time.Second, true
}

// line writes one status line (or record) about s.
func (p *progress) line(s pipeline.Stats) {
	r := statsRate(s.RunRows(), s)
	total := "?"
	if s.Estimate > 0 {
		total = fmt.Sprint(s.Estimate)
	}
	left, etaKnown := eta(s, r)
	all, allKnown := p.etaAll()
	state := "running"
	if s.Done {
		state = "done"
	}
	if p.g.logFormat == logJSON {
		attrs := []any{"collection", s.Collection, "state", state, "rows", s.Rows, "documents", s.Written, "failed", s.Failed}
		// A rate not known yet (too short a time) is left out, not 0.
		if r >= 0 {
			attrs = append(attrs, "rowsPerSecond", r)
		}
		if dr := statsRate(s.RunWritten(), s); dr >= 0 {
			attrs = append(attrs, "docsPerSecond", dr)
		}
		attrs = append(attrs, "elapsed", s.Elapsed.Seconds())
		if s.Estimate > 0 {
			attrs = append(attrs, "estimate", s.Estimate)
		}
		if s.PriorRows > 0 {
			attrs = append(attrs, "rowsBeforeThisRun", s.PriorRows, "documentsBeforeThisRun", s.PriorWritten)
		}
		if etaKnown {
			attrs = append(attrs, "eta", left.Round(time.Second).String())
		}
		if allKnown {
			attrs = append(attrs, "etaAll", all.Round(time.Second).String())
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
	etaText := "?"
	if etaKnown {
		etaText = left.Round(time.Second).String()
	}
	fmt.Fprintf(&b, ", %d failed, ETA %s", s.Failed, etaText)
	if allKnown {
		fmt.Fprintf(&b, ", all collections %s", all.Round(time.Second))
	}
	fmt.Fprintln(p.con, b.String())
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
	secs := w.Since.Round(time.Second)
	if p.bar != nil && p.bar.collection == w.Collection {
		// In the bar, in place of its rate and ETA, until the next frame.
		p.bar.waiting = fmt.Sprintf("waiting for %s %s", w.For, secs)
		p.bar.draw(p.con, p.width())
		return
	}
	if t, ok := p.waited[key]; ok && p.now().Sub(t) < waitEvery {
		return
	}
	p.waited[key] = p.now()
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
	fmt.Fprintln(p.con, msg)
}

// finish ends the bar being drawn (an interrupted collection's), which
// stays on the screen as last drawn.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.exit()
		p.bar = nil
	}
}

// bar is one collection's progress bar: one line of the terminal's
// width at most, redrawn in place, its fields of fixed width (padded)
// so that nothing moves from one frame to the next. progressbar draws
// it: our fields are its description (layout), then its percent and
// its bar, as wide as the line leaves; with no estimate, its spinner
// and the description.
type bar struct {
	key, collection, unit string
	nameWidth             int
	s                     pipeline.Stats
	// rate is the smoothed rate (-1: none yet), taken at rateRows and
	// rateElapsed.
	rate        float64
	rateRows    int64
	rateElapsed time.Duration
	all         time.Duration
	allKnown    bool
	multi       bool
	waiting     string
	drawn       time.Time

	// pb draws the bar on the console (nil: not drawn yet), its bar
	// inner columns wide (-1: a spinner).
	pb      *progressbar.ProgressBar
	pbInner int
}

func (p *progress) drawBar(s pipeline.Stats) {
	key := s.Collection + "\x00" + s.Table
	if p.bar != nil && p.bar.key != key {
		p.bar.exit()
		p.bar = nil
	}
	fresh := p.bar == nil
	if fresh {
		p.bar = &bar{key: key, collection: s.Collection, unit: unit(s), rate: -1, nameWidth: p.nameWidth(s.Collection), multi: len(p.entries) > 1}
	}
	b := p.bar
	b.s, b.waiting = s, ""
	b.smooth(s)
	b.all, b.allKnown = p.etaAll()
	now := p.now()
	if fresh || s.Done || now.Sub(b.drawn) >= drawEvery {
		b.drawn = now
		b.draw(p.con, p.width())
	}
	if s.Done {
		// progressbar drew the last frame once, and its OnCompletion
		// ended the line (console.keep).
		p.bar = nil
	}
}

// nameWidth is the width of the name field: the longest collection
// name of the run, at most 24 columns.
func (p *progress) nameWidth(name string) int {
	w := utf8.RuneCountInString(name)
	for _, e := range p.entries {
		w = max(w, utf8.RuneCountInString(e.collection))
	}
	return min(w, 24)
}

// smooth takes s into the bar's rate: the collection's rate over this
// run at first, then a mean weighted toward the last smoothing; the
// last frame's rate is the summary's.
func (b *bar) smooth(s pipeline.Stats) {
	n := s.RunRows()
	switch {
	case s.Done:
		b.rate = summaryRate(n, s.Elapsed)
	case b.rate < 0:
		if r := rate(n, s.Elapsed); r >= 0 {
			b.rate, b.rateRows, b.rateElapsed = r, n, s.Elapsed
		}
	default:
		dt := s.Elapsed - b.rateElapsed
		if dt < rateAfter {
			return
		}
		inst := float64(n-b.rateRows) / dt.Seconds()
		alpha := 1 - math.Exp(-dt.Seconds()/smoothing.Seconds())
		b.rate += alpha * (inst - b.rate)
		b.rateRows, b.rateElapsed = n, s.Elapsed
	}
}

// barTheme: ASCII, "[####......]".
var barTheme = progressbar.Theme{Saucer: "#", SaucerPadding: ".", BarStart: "[", BarEnd: "]"}

// newPB is a progressbar writing to w, with desc, a bar inner columns
// wide (inner < 0: a spinner, the total unknown) counting to max. Its
// own rate and ETA are off (they count rows done before a resume and
// move with every batch: ours, smoothed, are in desc); it draws when
// told (drawEvery is ours), a frame as "\r", the line, ESC[0K; done
// runs once the bar is finished (its last frame drawn) or exited.
func newPB(w io.Writer, desc string, inner int, max int64, done func()) *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetTheme(barTheme),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetElapsedTime(false),
		progressbar.OptionThrottle(0),
		// A spinner turns at each frame, not on a timer of its own.
		progressbar.OptionSetSpinnerChangeInterval(0),
	}
	if inner >= 0 {
		opts = append(opts, progressbar.OptionSetWidth(inner))
	} else {
		max = -1
	}
	if done != nil {
		opts = append(opts, progressbar.OptionOnCompletion(done))
	}
	return progressbar.NewOptions64(max, opts...)
}

// counts are the bar's progressbar figures: its max and current count.
// Until the collection is done the max stays above the count (the
// estimate can be short), so that progressbar shows 99% at most and
// does not finish the bar early; done, the count is the max (100%).
func (b *bar) counts() (known bool, pbMax, cur int64) {
	s := b.s
	if s.Estimate <= 0 {
		return false, -1, s.Rows
	}
	total := max(s.Estimate, s.Rows)
	if s.Done {
		return true, total, total
	}
	return true, max(total, s.Rows+1), s.Rows
}

// frame has pb draw the bar's present state with desc, in one write:
// the description is set without drawing (Describe would draw at once,
// with the count not set yet: two writes), then the count, which draws
// when progressbar's percent moved; else Describe draws. Done, the bar
// finished: its last frame, drawn once, and OnCompletion.
func (b *bar) frame(pb *progressbar.ProgressBar, desc string) {
	known, pbMax, cur := b.counts()
	progressbar.OptionSetDescription(desc)(pb)
	drawn := pb.String()
	if known && pb.GetMax64() != pbMax {
		pb.ChangeMax64(pbMax)
	}
	if b.s.Done {
		_ = pb.Finish()
		return
	}
	_ = pb.Set64(cur)
	if pb.String() == drawn {
		pb.Describe(desc)
	}
}

// draw draws the bar's present state on con, fitted to width columns:
// a progressbar of its own, made again when the bar's width changes
// (the terminal's did).
func (b *bar) draw(con *console, width int) {
	desc, inner := b.layout(width)
	if b.pb == nil || inner != b.pbInner {
		_, pbMax, _ := b.counts()
		b.pb, b.pbInner = newPB(con.bars(), desc, inner, pbMax, con.keep), inner
	}
	b.frame(b.pb, desc)
}

// exit ends the bar as last drawn (the collection did not finish).
func (b *bar) exit() {
	if b.pb != nil {
		_ = b.pb.Exit()
	}
}

// render is the bar's line as progressbar draws it in fewer than width
// columns (its control characters left out).
func (b *bar) render(width int) string {
	desc, inner := b.layout(width)
	_, pbMax, _ := b.counts()
	pb := newPB(io.Discard, desc, inner, pbMax, nil)
	b.frame(pb, desc)
	return strings.TrimSuffix(strings.TrimPrefix(pb.String(), "\r"), "\x1b[0K")
}

// minBar is the narrowest bar worth drawing (with its brackets); maxBar
// the widest.
const (
	minBar = 10
	maxBar = 42
)

// pbTail is what progressbar adds to the description: " 40% " (the
// percent in 4 columns), the bar with its brackets, and 2 blanks; with
// no bar, the spinner before it and 2 blanks.
func pbTail(inner int) int {
	if inner < 0 {
		return 4
	}
	return 5 + 1 + inner + 2 + 2
}

// layout is the bar's description, the fields before progressbar's
// percent and bar, and the bar's inner width (-1: no bar, a spinner:
// the estimate is unknown), the whole in fewer than width columns. Of
// the fields (name, counts, rate, ETA, ETA of all the collections),
// those that fit, the bar taking what is left: the counts go first,
// then the long rate, the ETA of all, the ETA, the rate; the name is
// cut to 12 columns before a field goes, to 8 only when none fits
// otherwise; the bar is narrower than minBar (down to 4 columns inside
// its brackets) rather than the ETA of all going.
func (b *bar) layout(width int) (string, int) {
	s := b.s
	spinner := s.Estimate <= 0
	total := max(s.Estimate, s.Rows)
	counts := fmt.Sprintf("(%d)", s.Rows)
	if !spinner {
		// As wide as the total's counts, from the first frame on.
		counts = fmt.Sprintf("%*s", 2*len(fmt.Sprint(total))+3, fmt.Sprintf("(%d/%d)", s.Rows, total))
	}
	rateNum := "-"
	if b.rate >= 0 {
		rateNum = compact(b.rate)
	}
	longRate := fmt.Sprintf("%5s %s/s", rateNum, b.unit)
	shortRate := fmt.Sprintf("%5s/s", rateNum)
	etaText := "ETA      ?"
	if s.Done {
		etaText = "      done"
	} else if left, ok := eta(s, b.rate); ok {
		etaText = "ETA " + fmt.Sprintf("%6s", shortDuration(left))
	}
	allText := ""
	if b.multi {
		allText = "all      ?"
		if b.allKnown {
			allText = "all " + fmt.Sprintf("%6s", shortDuration(b.all))
		}
	}
	if b.waiting != "" {
		// In the place of the rate and the ETA (and the counts').
		w := len(longRate) + 1 + len(etaText)
		longRate, shortRate, etaText = pad(b.waiting, w), pad(b.waiting, len(shortRate)+1+len(etaText)), ""
	}
	// Variants from richest to barest, each with the narrowest bar it
	// takes (inner columns); the first that fits is drawn.
	type variant struct {
		fields []string
		least  int
	}
	variants := []variant{
		{[]string{"counts", "long", "eta", "all"}, minBar - 2},
		{[]string{"long", "eta", "all"}, minBar - 2},
		{[]string{"short", "eta", "all"}, minBar - 2},
		// The bar narrower rather than a field gone.
		{[]string{"short", "eta", "all"}, 4},
		{[]string{"short", "eta"}, 4},
		{[]string{"eta"}, 4},
		{nil, 1},
	}
	field := map[string]string{"counts": counts, "long": longRate, "short": shortRate, "eta": etaText, "all": allText}
	avail := width - 1 // the last column left free: no terminal wraps
	type try struct {
		v     variant
		nameW int
	}
	var tries []try
	for _, v := range variants {
		tries = append(tries, try{v, b.nameWidth}, try{v, min(b.nameWidth, 12)})
	}
	for _, v := range variants {
		tries = append(tries, try{v, min(b.nameWidth, 8)})
	}
	for _, tr := range tries {
		parts := []string{pad(b.collection, tr.nameW)}
		used := tr.nameW
		for _, f := range tr.v.fields {
			if field[f] == "" {
				continue
			}
			parts = append(parts, field[f])
			used += 1 + utf8.RuneCountInString(field[f])
		}
		desc := strings.Join(parts, " ")
		if spinner {
			if used+pbTail(-1) <= avail {
				return desc, -1
			}
			continue
		}
		if inner := min(avail-used-pbTail(0), maxBar-2); inner >= tr.v.least {
			return desc, inner
		}
	}
	if spinner {
		return pad(b.collection, max(avail-pbTail(-1), 1)), -1
	}
	return pad(b.collection, max(avail-pbTail(1), 1)), 1
}

// pad is s cut or padded with blanks to exactly w columns; a cut name
// ends with "~".
func pad(s string, w int) string {
	r := []rune(s)
	if len(r) > w {
		if w <= 1 {
			return string(r[:w])
		}
		return string(r[:w-1]) + "~"
	}
	return s + strings.Repeat(" ", w-len(r))
}

// compact is n in at most 5 columns: 12345, 123k, 12.3M.
func compact(n float64) string {
	switch {
	case n < 99999.5:
		return fmt.Sprintf("%.0f", n)
	case n < 999.5e3:
		return fmt.Sprintf("%.0fk", n/1e3)
	case n < 99.95e6:
		return fmt.Sprintf("%.1fM", n/1e6)
	}
	return fmt.Sprintf("%.0fM", n/1e6)
}

// shortDuration is d in at most 6 columns: 59s, 12m05s, 3h07m, 12d03h.
func shortDuration(d time.Duration) string {
	s := int64(d.Round(time.Second).Seconds())
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 100*3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
}
