package main

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"slices"
	"strings"
)

// The benchmark chart (docs/images/bench.svg): bench/results.json drawn as
// horizontal bars, written by `make bench` after the results and by
// `go run ./bench -chart-only` (make bench-chart) from the results file
// alone. Speed: documents per second per benchmark, denorm beside the
// other tools and the floor (reading the same rows alone), each benchmark
// on its own scale; then the peak memory of every run that measured it.
// Every series of the results is drawn: one the groups below do not name
// goes into a last group of its own.

// chartBar is one bar of a group: a series, its label, and, for a floor
// (whose docs count rows), the series whose documents it is compared in.
type chartBar struct {
	series, label, docsOf string
}

type chartGroup struct {
	title string // fmt pattern over the results' config
	keys  []string
	bars  []chartBar
}

var chartGroups = []chartGroup{
	{"person: %s persons with contacts and addresses, directory target", []string{"scale"}, []chartBar{
		{"A", "denorm migrate", ""},
		{"P", "denorm plan", ""},
		{"V", "denorm verify", ""},
		{"floor", "floor: reading the rows alone (COPY)", "A"},
		{"B", "PostgreSQL json_agg, COPY to a file", ""},
		{"C", "naive loader: a query per person", ""},
	}},
	{"blog: %s posts, %s comments each (3 embedded, buckets of 100)", []string{"posts", "commentsPerPost"}, []chartBar{
		{"blogA", "denorm migrate", ""},
		{"blogFloor", "floor: reading the rows alone (COPY)", "blogA"},
		{"blogB", "PostgreSQL json_agg, COPY to files", ""},
	}},
	{"wide: %s orders with 4 lines of 16 columns", []string{"wideOrders"}, []chartBar{
		{"wideA", "denorm migrate", ""},
		{"wideFloor", "floor: reading the rows alone (COPY)", "wideA"},
		{"wideB", "PostgreSQL json_agg, COPY to a file", ""},
	}},
	{"keys: %s persons keyed by an integer, a pair, a uuid", []string{"scale"}, []chartBar{
		{"Kint", "denorm migrate, integer key", ""},
		{"KintFloor", "floor of the integer key", "Kint"},
		{"Kpair", "denorm migrate, two-integer key", ""},
		{"KpairFloor", "floor of the two-integer key", "Kpair"},
		{"Kuuid", "denorm migrate, uuid key", ""},
		{"KuuidFloor", "floor of the uuid key", "Kuuid"},
	}},
	{"into FerretDB: %s persons", []string{"targetScale"}, []chartBar{
		{"D", "denorm migrate", ""},
		{"E", "prebuilt documents, insertMany", ""},
	}},
}

// ChartBar is one drawn bar.
type ChartBar struct {
	Series, Label, Text string
	// Value is the bar's figure: documents per second, or MiB.
	Value float64
	// Kind colours it: denorm, floor, other.
	Kind string
	// X, Y, W, H are its rectangle.
	X, Y, W, H int
}

// ChartGroup is one group of bars, on its own scale: the longest bar is
// its largest value.
type ChartGroup struct {
	Title string
	Y     int
	Bars  []ChartBar
}

// Chart is the laid out chart.
type Chart struct {
	W, H   int
	Title  string
	Note   string
	Groups []ChartGroup
}

const (
	chartW      = 1020
	chartLabelW = 320 // bar labels, right-aligned before the bars
	chartBarMax = 400 // the longest bar of a group
	chartBarH   = 16
	chartRowH   = 22
	chartTitleH = 26
	chartGapH   = 12
	chartTop    = 64
)

func barKind(series string) string {
	switch {
	case strings.HasSuffix(series, "Floor") || series == "floor":
		return "floor"
	case slices.Contains([]string{"B", "C", "E", "blogB", "wideB"}, series):
		return "other"
	}
	return "denorm"
}

// thousands writes n rounded, with thousands separators.
func thousands(f float64) string {
	s := fmt.Sprintf("%.0f", f)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// layoutChart makes the chart of rep.
func layoutChart(rep *Report) *Chart {
	c := &Chart{W: chartW, Title: "denorm benchmarks: documents per second (longer is faster; each group on its own scale)",
		Note: fmt.Sprintf("bench/results.json of %s: %s cores, %s, PostgreSQL %s; median of %d runs", rep.When.Format("2006-01-02"), rep.Machine["cores"], rep.Machine["cpu"], rep.Machine["postgres"], rep.Config["reps"])}
	drawn := map[string]bool{}
	var groups []ChartGroup
	for _, g := range chartGroups {
		args := make([]any, len(g.keys))
		for i, k := range g.keys {
			args[i] = thousands(float64(rep.Config[k]))
		}
		cg := ChartGroup{Title: fmt.Sprintf(g.title, args...)}
		for _, b := range g.bars {
			s := rep.Series[b.series]
			if s == nil || s.Median.Seconds <= 0 {
				continue
			}
			drawn[b.series] = true
			v := s.DocsPS
			text := fmt.Sprintf("%s docs/s (%.1f s)", thousands(v), s.Median.Seconds)
			if b.docsOf != "" {
				if d := rep.Series[b.docsOf]; d != nil {
					// The floor reads rows; drawn as the rate of the
					// documents they make, had building them been free.
					v = float64(d.Median.Docs) / s.Median.Seconds
					text = fmt.Sprintf("%s docs/s (%.1f s for %s rows)", thousands(v), s.Median.Seconds, thousands(float64(s.Median.Docs)))
				}
			}
			cg.Bars = append(cg.Bars, ChartBar{Series: b.series, Label: b.label, Value: v, Text: text, Kind: barKind(b.series)})
		}
		if len(cg.Bars) > 0 {
			groups = append(groups, cg)
		}
	}
	// Series no group names: a group of their own, by name.
	var rest []string
	for name, s := range rep.Series {
		if !drawn[name] && s.Median.Seconds > 0 && s.PeakMiB == 0 {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	if len(rest) > 0 {
		cg := ChartGroup{Title: "other runs"}
		for _, name := range rest {
			s := rep.Series[name]
			cg.Bars = append(cg.Bars, ChartBar{Series: name, Label: name, Value: s.DocsPS, Kind: barKind(name),
				Text: fmt.Sprintf("%s docs/s (%.1f s)", thousands(s.DocsPS), s.Median.Seconds)})
			drawn[name] = true
		}
		groups = append(groups, cg)
	}
	if g, ok := typedChartGroup(rep.Typed); ok {
		groups = append(groups, g)
	}
	// Peak memory of every run that measured it.
	mem := ChartGroup{Title: "peak memory of denorm (MiB; shorter is leaner)"}
	var names []string
	for name, s := range rep.Series {
		if s.PeakMiB > 0 {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return orderOf(a) - orderOf(b) })
	for _, name := range names {
		s := rep.Series[name]
		label := memoryLabels[name]
		if label == "" {
			label = name
		}
		mem.Bars = append(mem.Bars, ChartBar{Series: name, Label: fmt.Sprintf("%s, %s docs", label, thousands(float64(s.Median.Docs))), Value: s.PeakMiB, Kind: "memory",
			Text: fmt.Sprintf("%.0f MiB", s.PeakMiB)})
		drawn[name] = true
	}
	if len(mem.Bars) > 0 {
		groups = append(groups, mem)
	}
	y := chartTop
	for gi := range groups {
		g := &groups[gi]
		g.Y = y
		y += chartTitleH
		top := 0.0
		for _, b := range g.Bars {
			top = math.Max(top, b.Value)
		}
		for i := range g.Bars {
			b := &g.Bars[i]
			b.X, b.Y, b.H = chartLabelW+10, y+(chartRowH-chartBarH)/2, chartBarH
			if top > 0 {
				b.W = int(math.Round(float64(chartBarMax) * b.Value / top))
			}
			if b.Value > 0 && b.W < 1 {
				b.W = 1
			}
			y += chartRowH
		}
		y += chartGapH
	}
	c.Groups = groups
	c.H = y + 10
	return c
}

// typedChartGroup is the typed benchmark's group: per type family, denorm
// migrate's time over the floor's at the larger scale (the goal is 1.3).
func typedChartGroup(t *TypedReport) (ChartGroup, bool) {
	if t == nil || len(t.Families) == 0 {
		return ChartGroup{}, false
	}
	g := ChartGroup{Title: fmt.Sprintf("typed (%s): migrate's time over the floor's, %s parents of 4 children (shorter is nearer; goal 1.3)",
		t.When.Format("2006-01-02"), thousands(float64(t.Config["parents"])))}
	for _, f := range t.Families {
		if len(f.Scales) == 0 || f.Scales[0].Ratio <= 0 {
			continue
		}
		s := f.Scales[0]
		label := f.Family
		if f.Family == typedWideFamily {
			label = fmt.Sprintf("%s (%s orders)", f.Family, thousands(float64(s.Parents)))
		}
		g.Bars = append(g.Bars, ChartBar{Series: "typed:" + f.Family, Label: label, Value: s.Ratio, Kind: "denorm",
			Text: fmt.Sprintf("%.2fx: decode %.0f ns/value, COPY %.0f", s.Ratio, f.DecodeNs, s.CopyNs)})
	}
	return g, len(g.Bars) > 0
}

// memoryLabels name the runs in the memory group.
var memoryLabels = map[string]string{
	"A": "person: migrate", "V": "person: verify", "P": "person: plan", "D": "person: migrate into FerretDB",
	"F1": "person: migrate (F1)", "F4": "person: 4x the data (F4)",
	"blogA": "blog: migrate", "blogQ": "blog: migrate a quarter", "wideA": "wide: migrate", "wideQ": "wide: migrate a quarter",
	"Kint": "keys: integer", "Kpair": "keys: two integers", "Kuuid": "keys: uuid",
}

// orderOf is a series' place in the results' order (order), unknown ones last.
func orderOf(name string) int {
	if i := slices.Index(order, name); i >= 0 {
		return i
	}
	return len(order)
}

var chartColours = map[string]string{"denorm": "#1e3a5f", "floor": "#2e7d32", "other": "#8a94a6", "memory": "#b26a00"}

// writeSVG writes the chart as a standalone SVG file.
func (c *Chart) writeSVG(w io.Writer) error {
	e := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" class="bench" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="denorm benchmarks">
<style>text{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;fill:#1d2330}text.title{font-size:15px;font-weight:700}text.note{font-size:11px;fill:#5a6478}text.group{font-size:13px;font-weight:700}text.label{font-size:12px}text.value{font-size:11px;fill:#3b4456}</style>
<rect width="100%%" height="100%%" fill="#fff"/>
`, c.W, c.H, c.W, c.H)
	fmt.Fprintf(&b, `<text class="title" x="10" y="22">%s</text>`+"\n", e(c.Title))
	fmt.Fprintf(&b, `<text class="note" x="10" y="40">%s</text>`+"\n", e(c.Note))
	lx := 10
	for _, k := range []struct{ kind, text string }{{"denorm", "denorm"}, {"floor", "floor: the same rows read alone"}, {"other", "other tools"}, {"memory", "peak memory"}} {
		fmt.Fprintf(&b, `<rect x="%d" y="48" width="10" height="10" fill="%s"/><text class="note" x="%d" y="57">%s</text>`, lx, chartColours[k.kind], lx+14, e(k.text))
		lx += 14 + 7*len(k.text) + 18
	}
	b.WriteString("\n")
	for _, g := range c.Groups {
		fmt.Fprintf(&b, `<text class="group" x="10" y="%d">%s</text>`+"\n", g.Y+18, e(g.Title))
		for _, bar := range g.Bars {
			fmt.Fprintf(&b, `<text class="label" x="%d" y="%d" text-anchor="end">%s</text>`, chartLabelW, bar.Y+12, e(bar.Label))
			fmt.Fprintf(&b, `<rect class="bar" data-series="%s" data-value="%g" x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, e(bar.Series), bar.Value, bar.X, bar.Y, bar.W, bar.H, chartColours[bar.Kind])
			fmt.Fprintf(&b, `<text class="value" x="%d" y="%d">%s</text>`+"\n", bar.X+bar.W+6, bar.Y+12, e(bar.Text))
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeChart draws rep into path.
func writeChart(rep *Report, path string) error {
	var b strings.Builder
	if err := layoutChart(rep).writeSVG(&b); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// chartOnly draws the results file results into path (-chart-only).
func chartOnly(results, path string) error {
	data, err := os.ReadFile(results)
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", results, err)
	}
	return writeChart(&rep, path)
}
