package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
)

// The HTML report is one self-contained file: inline CSS and SVG, no
// script, no network.

type svgBox struct {
	X, Y, W, H int
	Title, Sub string
	Class      string
}

type svgLine struct{ X1, Y1, X2, Y2 int }

type diagram struct {
	W, H  int
	Boxes []svgBox
	Lines []svgLine
}

// layout places a collection's table tree left to right, one row per leaf.
func layout(root *TableNode) diagram {
	const bw, bh, gx, gy = 210, 40, 50, 14
	var d diagram
	row := 0
	var place func(n *TableNode, depth int) (int, int)
	place = func(n *TableNode, depth int) (int, int) {
		x := 10 + depth*(bw+gx)
		var ys []int
		for _, c := range n.Children {
			cx, cy := place(c, depth+1)
			_ = cx
			ys = append(ys, cy)
		}
		var y int
		if len(ys) == 0 {
			y = 10 + row*(bh+gy)
			row++
		} else {
			y = (ys[0] + ys[len(ys)-1]) / 2
		}
		title := n.Table
		sub := "root table"
		if n.Field != "" {
			title = n.Field
			sub = n.Kind + " from " + n.Table
			if n.Object {
				sub += " (object)"
			}
			if n.Limit > 0 {
				sub += fmt.Sprintf(" limit %d", n.Limit)
			}
		}
		if n.Reads != "" {
			sub += ", " + n.Reads
		}
		if len(n.RowSecurity) > 0 {
			sub += ", row-level security"
		}
		d.Boxes = append(d.Boxes, svgBox{X: x, Y: y, W: bw, H: bh, Title: title, Sub: sub, Class: n.Kind})
		for _, cy := range ys {
			d.Lines = append(d.Lines, svgLine{X1: x + bw, Y1: y + bh/2, X2: x + bw + gx, Y2: cy + bh/2})
		}
		if x+bw+10 > d.W {
			d.W = x + bw + 10
		}
		return x, y
	}
	place(root, 0)
	d.H = 10 + row*(bh+gy)
	return d
}

type bar struct {
	X, Y, W, H int
	Label      string
}

type histo struct {
	W, H     int
	Bars     []bar
	Lo, Hi   string
	MaxCount int64
	// Ticks label the count axis (documents per bar): 0, half the
	// tallest bar, the tallest; Axis is the axis's bottom.
	Ticks []tick
	Axis  int
}

type tick struct {
	Y     int
	Label string
}

func histogramSVG(bins []Bin) histo {
	// Bars start at x0, right of the count axis's labels.
	const x0 = 52
	h := histo{W: 460, H: 140, Axis: 120}
	if len(bins) == 0 {
		return h
	}
	for _, b := range bins {
		h.MaxCount = max(h.MaxCount, b.Count)
	}
	top, bottom := 10, h.H-20
	h.Axis = bottom
	h.Ticks = []tick{{Y: bottom, Label: "0"}, {Y: top, Label: fmt.Sprint(h.MaxCount)}}
	if h.MaxCount >= 4 {
		h.Ticks = append(h.Ticks, tick{Y: (top + bottom) / 2, Label: fmt.Sprint(h.MaxCount / 2)})
	}
	bw := (h.W - x0 - 10) / len(bins)
	for i, b := range bins {
		bh := 0
		if h.MaxCount > 0 {
			bh = int(float64(bottom-top) * float64(b.Count) / float64(h.MaxCount))
		}
		if b.Count > 0 && bh < 1 {
			bh = 1
		}
		h.Bars = append(h.Bars, bar{X: x0 + i*bw, Y: bottom - bh, W: max(bw-2, 1), H: bh,
			Label: fmt.Sprintf("%s to %s: %s", Bytes(b.From), Bytes(b.To), Plural(b.Count, "document", "documents"))})
	}
	h.Lo, h.Hi = Bytes(bins[0].From), Bytes(bins[len(bins)-1].To)
	return h
}

type htmlColl struct {
	*Collection
	Diagram  diagram
	Histo    histo
	Warnings []Warning
}

// pretty indents a sample's JSON for reading; a sample cut short (not
// valid JSON) is shown as it is.
func pretty(s string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		return s
	}
	return b.String()
}

var htmlFuncs = template.FuncMap{
	"pretty": pretty,
	"bytes":  Bytes,
	"int":    func(f float64) int { return int(f) },
	"int64":  func(n int64) int { return int(n) },
	"types":  types,
	"pct":    pct,
	"upper":  strings.ToUpper,
	"sevcls": func(s string) string { return "sev-" + s },
}

// page is parsed on first use: parsing it took 0.7 ms of every command's
// start, and only plan's HTML report needs it.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(htmlFuncs).Parse(pageText))
})

const pageText = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>denorm plan: {{.R.Mapping}}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2330;background:#fafbfc}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:2px solid #d5dbe5;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;margin:6px 0 10px;background:#fff}td,th{border:1px solid #d5dbe5;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f6}td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#fff;border:1px solid #d5dbe5;padding:8px;white-space:pre-wrap;word-break:break-all;max-height:320px;overflow:auto;font-size:12px}
.note{color:#5a6478}.sev-error{color:#fff;background:#c62828;padding:0 6px;border-radius:3px}
.sev-warning{color:#000;background:#ffb300;padding:0 6px;border-radius:3px}.sev-info{color:#fff;background:#1e88e5;padding:0 6px;border-radius:3px}
svg text{font:12px system-ui,sans-serif}rect.root{fill:#1e3a5f}rect.embed{fill:#2e7d32}rect.lookup{fill:#6a4c93}rect.ids{fill:#b26a00}rect.aggregate{fill:#00838f}
text.t{fill:#fff;font-weight:600}text.s{fill:#e8ecf2;font-size:11px}rect.bar{fill:#3f6fb5}
.legend span{display:inline-block;padding:0 6px;margin-right:6px;color:#fff;border-radius:3px;font-size:12px}
.cols{display:flex;gap:24px;flex-wrap:wrap}
tr.total td{font-weight:700;background:#eef1f6}table td.over,tr.total td.over{background:#c62828;color:#fff;font-weight:700}
nav.contents{background:#fff;border:1px solid #d5dbe5;padding:6px 14px;display:inline-block}nav.contents ul{margin:4px 0;padding-left:18px}
svg text.tick{font-size:10px;fill:#5a6478}div.model{overflow:auto}
{{.DiagramCSS}}</style></head><body>
<h1>denorm plan</h1>
<p class="note">Mapping <b>{{.R.Mapping}}</b>; size limit {{bytes .R.MaxDocSize}}; {{.Note}}; generated {{.R.Generated.Format "2006-01-02 15:04:05 UTC"}}.</p>
<nav class="contents" id="contents"><b>Contents</b><ul>
{{if .Model}}<li><a href="#model">Document model</a></li>{{end}}<li><a href="#summary">Summary</a></li>{{if .R.Coverage}}<li><a href="#coverage">Coverage</a> ({{.R.Totals.Uncovered}} rows in no document)</li>{{end}}{{if .R.Fanout}}<li><a href="#fanout">Fan-out</a></li>{{end}}<li><a href="#warnings">Warnings</a> ({{len .Warnings}})</li>{{if .R.Indexes}}<li><a href="#indexes">Indexes</a> ({{len .R.Indexes}})</li>{{end}}<li><a href="#shapes">Document shapes</a><ul>
{{range .Colls}}<li><a href="#c-{{.Name}}-{{.Table}}">{{.Name}}</a> <span class="note">({{.Kind}} from {{.Table}})</span></li>{{end}}
</ul></li></ul></nav>
{{if .Model}}<h2 id="model">Document model</h2>
<p class="note">Every collection as a box with its embedded arrays and objects nested in it (items per document p50/p99/max), buckets with their page size, references and id arrays as arrows between collections; indexed fields carry a key, shard key fields a diamond; {{.Hidden}}.</p>
<div class="model">{{.Model}}</div>
{{end}}<h2 id="summary">Summary</h2>
<table class="summary"><tr><th>collection</th><th>kind</th><th>table</th><th>documents</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>over limit</th><th>dangling</th></tr>
{{range .Colls}}<tr><td><a href="#c-{{.Name}}-{{.Table}}">{{.Name}}</a></td><td>{{.Kind}}</td><td>{{.Table}}</td><td class="n">{{.Documents}}</td><td class="n">{{bytes .Size.P50}}</td><td class="n">{{bytes .Size.P95}}</td><td class="n">{{bytes .Size.P99}}</td><td class="n">{{bytes .Size.Max}}</td><td class="n{{if .TooLarge.Count}} over{{end}}">{{.TooLarge.Count}}</td><td class="n">{{.Dangling}}</td></tr>
{{end}}<tr class="total"><td>total</td><td></td><td></td><td class="n">{{.R.Totals.Documents}}</td><td colspan="4" class="n">{{bytes (int64 .R.Totals.Bytes)}} in all</td><td class="n{{if .R.Totals.TooLarge}} over{{end}}">{{.R.Totals.TooLarge}}</td><td class="n">{{.R.Totals.Dangling}}</td></tr>
</table>
{{if .R.Coverage}}<h2 id="coverage">Coverage</h2>
<p class="note">Source rows that reach at least one document, per table read; {{.R.Totals.Uncovered}} reach none.</p>
<table class="coverage"><tr><th>table</th><th>rows</th><th>in a document</th><th>in none</th><th>why</th><th>for example</th></tr>
{{range .R.Coverage}}{{$c := .}}{{if not .Reasons}}<tr><td>{{.Table}}</td><td class="n">{{.Rows}}</td><td class="n">{{.Reached}}</td><td class="n">0</td><td></td><td></td></tr>
{{end}}{{range $i, $r := .Reasons}}<tr>{{if eq $i 0}}<td rowspan="{{len $c.Reasons}}">{{$c.Table}}</td><td class="n" rowspan="{{len $c.Reasons}}">{{$c.Rows}}</td><td class="n" rowspan="{{len $c.Reasons}}">{{$c.Reached}}</td>{{end}}<td class="n over">{{$r.Rows}}</td><td>{{$r.Message}}</td><td>{{range $r.Samples}}<code>{{.}}</code><br>{{end}}</td></tr>
{{end}}{{end}}</table>{{end}}
{{if .R.Fanout}}<h2 id="fanout">Fan-out</h2>
<p class="note">Documents one change of a row makes sync rewrite, over the table's rows, and per place the mapping reads it{{if .R.MaxFanout}}; a table over {{.R.MaxFanout}} is flagged{{end}}.</p>
<table class="fanout"><tr><th>table</th><th>rows</th><th>p50</th><th>p99</th><th>max</th><th>mean</th><th>place</th><th>p50</th><th>p99</th><th>max</th></tr>
{{range .R.Fanout}}{{$t := .}}{{range $i, $p := .Places}}<tr>{{if eq $i 0}}<td rowspan="{{len $t.Places}}">{{$t.Table}}</td><td class="n" rowspan="{{len $t.Places}}">{{$t.Rows}}</td><td class="n" rowspan="{{len $t.Places}}">{{$t.P50}}</td><td class="n" rowspan="{{len $t.Places}}">{{$t.P99}}</td><td class="n{{if $t.Over $.R.MaxFanout}} over{{end}}" rowspan="{{len $t.Places}}">{{$t.Max}}</td><td class="n" rowspan="{{len $t.Places}}">{{printf "%.1f" $t.Mean}}</td>{{end}}<td>{{$p.Cause $t.Table}}</td><td class="n">{{$p.P50}}</td><td class="n">{{$p.P99}}</td><td class="n">{{$p.Max}}</td></tr>
{{end}}{{end}}</table>{{end}}
<h2 id="warnings">Warnings</h2>
{{if not .Warnings}}<p>No warnings.</p>{{else}}<table class="warnings"><tr><th>severity</th><th>rule</th><th>collection</th><th>finding</th><th>suggestion</th></tr>
{{range .Warnings}}<tr class="{{sevcls .Severity}}-row"><td><span class="{{sevcls .Severity}}">{{upper .Severity}}</span></td><td>{{.Rule}}</td><td>{{.Collection}}</td><td>{{.Message}}</td><td>{{.Suggestion}}</td></tr>
{{end}}</table>{{end}}
{{if .R.Indexes}}<h2 id="indexes">Indexes</h2>
<table class="indexes"><tr><th>collection</th><th>name</th><th>keys</th><th>options</th><th>why</th></tr>
{{range .R.Indexes}}<tr><td>{{.Collection}}</td><td><code>{{.Name}}</code></td><td><code>{{.Keys}}</code></td><td>{{if .Unique}}unique {{end}}{{if .Partial}}partial <code>{{.Partial}}</code>{{end}}</td><td>{{if .Default}}default: {{.Reason}}{{else}}declared in the mapping{{end}}</td></tr>
{{end}}{{range .R.ShardKeys}}<tr><td>{{.Collection}}</td><td>shard key</td><td><code>{{.Key}}</code></td><td></td><td>declared in the mapping</td></tr>{{end}}</table>{{end}}
<h2 id="shapes">Document shapes</h2>
<p class="legend"><span style="background:#1e3a5f">root</span><span style="background:#2e7d32">embed</span><span style="background:#6a4c93">lookup</span><span style="background:#b26a00">ids</span><span style="background:#00838f">aggregate</span></p>
{{range .Colls}}
<h2 id="c-{{.Name}}-{{.Table}}">Collection {{.Name}} <span class="note">({{.Kind}} from {{.Table}}: {{.Documents}} documents from {{.Rows}} rows)</span></h2>
{{with .OnDeleteText}}<p class="note">{{.}}</p>
{{end}}<h3>Built from</h3>
<svg class="diagram" width="{{.Diagram.W}}" height="{{.Diagram.H}}" viewBox="0 0 {{.Diagram.W}} {{.Diagram.H}}" role="img" aria-label="tables of {{.Name}}">
{{range .Diagram.Lines}}<line x1="{{.X1}}" y1="{{.Y1}}" x2="{{.X2}}" y2="{{.Y2}}" stroke="#8a94a6" stroke-width="2"/>{{end}}
{{range .Diagram.Boxes}}<g><rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}" rx="5"/><text class="t" x="{{.X}}" dx="8" y="{{.Y}}" dy="16">{{.Title}}</text><text class="s" x="{{.X}}" dx="8" y="{{.Y}}" dy="32">{{.Sub}}</text></g>{{end}}
</svg>
<div class="cols"><div>
<h3>Size distribution</h3>
<table><tr><th>min</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>mean</th></tr><tr><td class="n">{{bytes .Size.Min}}</td><td class="n">{{bytes .Size.P50}}</td><td class="n">{{bytes .Size.P95}}</td><td class="n">{{bytes .Size.P99}}</td><td class="n">{{bytes .Size.Max}}</td><td class="n">{{bytes (int .Size.Mean)}}</td></tr></table>
<svg class="histogram" width="{{.Histo.W}}" height="{{.Histo.H}}" role="img" aria-label="size histogram of {{.Name}}">
<rect x="0" y="0" width="{{.Histo.W}}" height="{{.Histo.H}}" fill="#fff" stroke="#d5dbe5"/>
{{range .Histo.Bars}}<rect class="bar" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"><title>{{.Label}}</title></rect>{{end}}
<line x1="48" y1="10" x2="48" y2="{{.Histo.Axis}}" stroke="#8a94a6"/>{{range .Histo.Ticks}}<text class="tick count" x="44" y="{{.Y}}" dy="4" text-anchor="end">{{.Label}}</text>{{end}}
<text class="tick" x="52" y="{{.Histo.H}}" dy="-4">{{.Histo.Lo}}</text><text class="tick" x="{{.Histo.W}}" dx="-4" y="{{.Histo.H}}" dy="-4" text-anchor="end">{{.Histo.Hi}}</text>
</svg></div>
<div><h3>Largest arrays</h3>
{{if .Arrays}}<table><tr><th>path</th><th>max</th><th>p99</th><th>p50</th><th>longest in</th></tr>
{{range .Arrays}}<tr><td><code>{{.Path}}</code></td><td class="n">{{.Max}}</td><td class="n">{{.P99}}</td><td class="n">{{.P50}}</td><td>{{.MaxSource}}</td></tr>{{end}}</table>{{else}}<p>No arrays.</p>{{end}}
</div></div>
{{if .TooLarge.Count}}<h3>Over the size limit: {{.TooLarge.Count}} documents</h3><table><tr><th>source</th><th>_id</th><th>size</th></tr>{{range .TooLarge.Docs}}<tr><td>{{.Source}}</td><td>{{.ID}}</td><td class="n">{{bytes .Size}}</td></tr>{{end}}</table>{{end}}
{{if .References}}<h3>References</h3><table><tr><th>field</th><th>collection</th><th>checked</th><th>dangling</th><th>examples</th></tr>
{{range .References}}<tr><td><code>{{.Path}}</code></td><td>{{.Collection}}</td><td class="n">{{.Checked}}</td><td class="n">{{.Dangling}}</td><td>{{.Skipped}}{{range .Examples}}{{.Value}} in {{.Source}}<br>{{end}}</td></tr>{{end}}</table>{{end}}
{{if .SubMillisecond}}<h3>Timestamps with digits below the millisecond</h3><p>A BSON date drops them (rounded toward the past); <code>timestamp: string</code> keeps them.</p><table><tr><th>field</th><th>column</th><th>values</th><th>e.g.</th><th>in</th></tr>
{{range .SubMillisecond}}<tr><td><code>{{.Path}}</code></td><td>{{if .Column}}{{.Column}}{{else}}(computed){{end}}</td><td class="n">{{.Count}}</td><td>{{.Example}}</td><td>{{.Source}}</td></tr>{{end}}</table>{{end}}
{{if .Warnings}}<h3>Warnings</h3><ul>{{range .Warnings}}<li><span class="{{sevcls .Severity}}">{{upper .Severity}}</span> {{.Message}}</li>{{end}}</ul>{{end}}
<h3>Inferred shape</h3>
<table><tr><th>field</th><th>types</th><th>present</th></tr>{{range .Shape}}<tr><td><code>{{.Path}}</code></td><td>{{types .Types}}</td><td class="n">{{pct .Present .Of}}</td></tr>{{end}}</table>
<h3>Samples</h3>
{{with .Typical}}<p>Typical document ({{.Source}}, {{bytes .Size}}):</p><pre class="sample">{{pretty .JSON}}</pre>{{end}}
{{with .Largest}}<p>Largest document ({{.Source}}, {{bytes .Size}}):</p><pre class="sample">{{pretty .JSON}}</pre>{{end}}
{{end}}
</body></html>
`

func writeHTML(w io.Writer, r *Report) error {
	var colls []htmlColl
	for _, c := range r.Collections {
		hc := htmlColl{Collection: c, Diagram: layout(c.Tables), Histo: histogramSVG(c.Histogram)}
		for _, wr := range BySeverity(r.Warnings) {
			if wr.Collection == c.Name {
				hc.Warnings = append(hc.Warnings, wr)
			}
		}
		colls = append(colls, hc)
	}
	data := map[string]any{"R": r, "Colls": colls, "Note": estimateNote(r), "Warnings": BySeverity(r.Warnings), "DiagramCSS": template.CSS(diagramCSS),
		"Hidden": "the other fields are counted (\"+ N more fields\")"}
	if r.Model != nil {
		var svg strings.Builder
		if err := ModelSVG(&svg, r.Model.WithStats(r.Collections)); err != nil {
			return err
		}
		data["Model"] = template.HTML(svg.String()) // built by WriteSVG, every text escaped
	}
	return page().Execute(w, data)
}
