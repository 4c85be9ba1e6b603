package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"unicode"
)

// The model diagram: a Model drawn as one inline SVG, no script, no
// network. Collections are boxes on a grid (in the mapping's order, a few
// columns wide), each box as tall as its content: a title, one line per
// entry (its table, documents and sizes; a bucket's page size), then its
// fields, embedded arrays and objects drawn as boxes nested in it with
// their items per document (p50/p99/max). Indexed fields carry a key (gold
// when unique), shard key fields a diamond. References and id arrays are
// arrows from their field's line to the referenced collection's box,
// routed through the gaps between the boxes: out of the source's column
// into the gap to its right, along the gap above the target's row, down
// the gap left of the target's column and into the box, each arrow on a
// lane of its own in every gap it takes, so no arrow crosses a box and no
// two run along each other.
//
// Text widths are estimated conservatively (textWidth), which the browser
// test checks: every label fits its box.

// Sizes of the drawing, in pixels.
const (
	dgTitleH  = 26 // a box's title band
	dgLineH   = 16 // an entry's line
	dgRowH    = 18 // a field's line
	dgStatH   = 15 // an array's figures line, below its name
	dgIndent  = 14 // nesting step
	dgPad     = 10 // text inset from a box's left edge
	dgMarkW   = 16 // room for a key or diamond before a name
	dgLane    = 8  // distance between arrows in a gap
	dgGap     = 20 // a gap between columns or rows, besides its lanes
	dgLegendH = 30 // the legend's band above the grid
	dgMinBoxW = 180
	// dgNestInset is how far a nested box's right edge is from its
	// container's.
	dgNestInset = 6
)

// Diagram is a laid out model.
type Diagram struct {
	W, H   int
	Boxes  []*DiagramBox
	Arrows []DiagramArrow
	// Legend labels, placed above the grid.
	Legend []DiagramLabel
}

// DiagramBox is one collection's box; its labels and nested boxes are in
// absolute coordinates.
type DiagramBox struct {
	Name       string
	X, Y, W, H int
	Row, Col   int
	Labels     []DiagramLabel
	Nests      []DiagramNest
	Marks      []DiagramMark
	// fieldY is each drawn field path's line middle (the start of its
	// arrow), relative to the box until placed.
	fieldY map[string]int
}

// DiagramLabel is one text: X, Y its baseline's start, W its estimated
// width; Class one of title, entry, field, stat, more, legend.
type DiagramLabel struct {
	X, Y, W int
	Text    string
	Class   string
}

// DiagramNest is an embedded array or object (or a bucket's items) drawn
// inside its collection's box.
type DiagramNest struct {
	X, Y, W, H int
	Kind       string
	Path       string
}

// DiagramMark is a key (an indexed field; Unique: of a unique index) or a
// diamond (Shard) at X, Y (the mark's middle).
type DiagramMark struct {
	X, Y   int
	Shard  bool
	Unique bool
}

// DiagramArrow is a reference or id array: a path of points from the
// field's line to the target box's left edge.
type DiagramArrow struct {
	From, To, Path string
	Ids            bool
	Points         [][2]int
}

// textWidth estimates the width of s in pixels at font size px, on the
// wide side: the browser test checks every label fits.
func textWidth(s string, px float64, bold bool) int {
	w := 0.0
	for _, r := range s {
		var em float64
		switch {
		case r > unicode.MaxASCII:
			em = 1.0
		case strings.ContainsRune("il.,:;'!|[]()jft ", r):
			em = 0.36
		case strings.ContainsRune("mwMW@%", r):
			em = 1.0
		case unicode.IsUpper(r) || strings.ContainsRune("&#_~<>=+?", r):
			em = 0.8
		default:
			em = 0.64
		}
		w += em
	}
	if bold {
		w *= 1.12
	}
	return int(math.Ceil(w*px)) + 2
}

const (
	pxTitle = 13
	pxField = 12
	pxSmall = 11
)

// number writes n with thousands separators.
func number(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func arrayFigures(s *ArrayStat, per string) string {
	return fmt.Sprintf("%s p50 %d · p99 %d · max %d", per, s.P50, s.P99, s.Max)
}

// boxContent lays out a collection's box with its top left at 0, 0.
func boxContent(mc *ModelCollection) *DiagramBox {
	b := &DiagramBox{Name: mc.Name, fieldY: map[string]int{}}
	y := 0
	right := dgMinBoxW // the widest line's right end
	depth := 0         // the nesting of the current line: nested boxes end depth*dgNestInset left of the box's edge
	add := func(x, baseline int, text, class string, px float64, bold bool) {
		w := textWidth(text, px, bold)
		b.Labels = append(b.Labels, DiagramLabel{X: x, Y: baseline, W: w, Text: text, Class: class})
		right = max(right, x+w+dgPad+depth*dgNestInset)
	}
	var nestDepth []int
	add(dgPad, 17, mc.Name, "title", pxTitle, true)
	y = dgTitleH + 4
	for _, e := range mc.Entries {
		var lines []string
		if e.Bucket {
			lines = append(lines, fmt.Sprintf("buckets: pages of %d %s by %s", e.PageSize, "rows of "+e.Table, e.By))
		} else {
			lines = append(lines, "from "+e.Table)
		}
		if e.HasStats {
			what := "documents"
			if e.Bucket {
				what = "pages"
			}
			if e.Documents == 1 {
				what = strings.TrimSuffix(what, "s")
			}
			lines = append(lines, fmt.Sprintf("%s %s · p50 %s · p99 %s · max %s", number(e.Documents), what, Bytes(e.Size.P50), Bytes(e.Size.P99), Bytes(e.Size.Max)))
		}
		for _, l := range lines {
			add(dgPad, y+12, l, "entry", pxSmall, false)
			y += dgLineH
		}
		y += 4
		var fields func(fs []*ModelField, d int)
		fields = func(fs []*ModelField, d int) {
			for _, f := range fs {
				depth = d
				x := dgPad + d*dgIndent
				if f.Kind == FieldMore {
					add(x+dgMarkW, y+13, fmt.Sprintf("+ %s", Plural(int64(f.More), "more field", "more fields")), "more", pxSmall, false)
					y += dgRowH
					continue
				}
				// The marks before the name: a diamond, then a key.
				tx := x + dgMarkW
				mx := x + 5
				if f.Shard {
					b.Marks = append(b.Marks, DiagramMark{X: mx - 3, Y: y + dgRowH/2, Shard: true})
					if f.Index {
						mx += 10
						tx += 10
					}
				}
				if f.Index {
					b.Marks = append(b.Marks, DiagramMark{X: mx, Y: y + dgRowH/2, Unique: f.Unique})
				}
				text := f.Name
				switch f.Kind {
				case FieldRef:
					text += " → " + f.Ref
				case FieldIds:
					text += ": [ids]"
					if f.Ref != "" {
						text += " → " + f.Ref
					} else {
						text += " of " + f.Table
					}
				case FieldArray:
					text += ": [ ] of " + f.Table
				case FieldObject:
					text += ": { } from " + f.Table
				case FieldItems:
					text += ": [ ] page items"
				}
				nested := f.Kind == FieldArray || f.Kind == FieldObject || f.Kind == FieldItems
				top := y
				if nested {
					y += 2
				}
				add(tx, y+13, text, "field", pxField, nested)
				b.fieldY[f.Path] = y + dgRowH/2
				y += dgRowH
				var stat string
				switch {
				case f.Stats != nil && f.Kind == FieldItems:
					stat = arrayFigures(f.Stats, "items per page:")
				case f.Stats != nil:
					stat = arrayFigures(f.Stats, "items:")
				}
				if f.Limit > 0 {
					if stat != "" {
						stat += " · "
					}
					stat += fmt.Sprintf("limit %d", f.Limit)
				}
				if stat != "" {
					add(x+dgMarkW, y+11, stat, "stat", pxSmall, false)
					y += dgStatH
				}
				if nested {
					fields(f.Children, d+1)
					depth = d
					y += 4
					b.Nests = append(b.Nests, DiagramNest{X: x - 4, Y: top, H: y - top, Kind: f.Kind, Path: f.Path})
					nestDepth = append(nestDepth, d+1)
					y += 2
				}
			}
		}
		fields(e.Fields, 0)
		depth = 0
		y += 6
	}
	b.W, b.H = right, y
	// Nested boxes reach to the right edge, less their depth.
	for i := range b.Nests {
		b.Nests[i].W = b.W - nestDepth[i]*dgNestInset - b.Nests[i].X
	}
	return b
}

// Layout places m's boxes on a grid and routes its arrows.
func Layout(m *Model) *Diagram {
	d := &Diagram{}
	n := len(m.Collections)
	cols := int(math.Ceil(math.Sqrt(float64(n))))
	cols = max(1, min(cols, 4))
	rows := (n + cols - 1) / cols
	index := map[string]int{}
	for i, mc := range m.Collections {
		b := boxContent(mc)
		b.Row, b.Col = i/cols, i%cols
		d.Boxes = append(d.Boxes, b)
		index[mc.Name] = i
	}
	colW := make([]int, cols)
	rowH := make([]int, rows)
	for _, b := range d.Boxes {
		colW[b.Col] = max(colW[b.Col], b.W)
		rowH[b.Row] = max(rowH[b.Row], b.H)
	}
	// Lanes: gutter g is left of column g (g = cols: right of the last);
	// channel r is above row r.
	type route struct {
		arrow         ModelArrow
		src, dst      int
		exitG, entryG int
		exitL, entryL int
		chanL         int
		direct        bool
	}
	gutterLanes := make([]int, cols+1)
	chanLanes := make([]int, rows)
	var routes []*route
	incoming := map[int][]*route{}
	for _, a := range m.Arrows {
		s, ok1 := index[a.From]
		t, ok2 := index[a.To]
		if !ok1 || !ok2 {
			continue // a reference to a collection the mapping has not: its field's text names it
		}
		r := &route{arrow: a, src: s, dst: t}
		sb, tb := d.Boxes[s], d.Boxes[t]
		r.exitG, r.entryG = sb.Col+1, tb.Col
		r.exitL = gutterLanes[r.exitG]
		gutterLanes[r.exitG]++
		if r.exitG == r.entryG {
			r.direct, r.entryL = true, r.exitL
		} else {
			r.entryL = gutterLanes[r.entryG]
			gutterLanes[r.entryG]++
			r.chanL = chanLanes[tb.Row]
			chanLanes[tb.Row]++
		}
		routes = append(routes, r)
		incoming[t] = append(incoming[t], r)
	}
	gutterW := make([]int, cols+1)
	for g, l := range gutterLanes {
		gutterW[g] = dgGap + dgLane*l
	}
	chanH := make([]int, rows)
	for r, l := range chanLanes {
		chanH[r] = dgGap + dgLane*l
	}
	colX := make([]int, cols)
	x := 0
	gutterX := make([]int, cols+1) // each gutter's left edge
	for c := 0; c < cols; c++ {
		gutterX[c] = x
		x += gutterW[c]
		colX[c] = x
		x += colW[c]
	}
	gutterX[cols] = x
	x += gutterW[cols]
	d.W = x
	rowY := make([]int, rows)
	chanY := make([]int, rows)
	y := dgLegendH
	for r := 0; r < rows; r++ {
		chanY[r] = y
		y += chanH[r]
		rowY[r] = y
		y += rowH[r]
	}
	d.H = y + dgGap
	for _, b := range d.Boxes {
		b.X, b.Y = colX[b.Col], rowY[b.Row]
		for i := range b.Labels {
			b.Labels[i].X += b.X
			b.Labels[i].Y += b.Y
		}
		for i := range b.Nests {
			b.Nests[i].X += b.X
			b.Nests[i].Y += b.Y
		}
		for i := range b.Marks {
			b.Marks[i].X += b.X
			b.Marks[i].Y += b.Y
		}
	}
	laneX := func(g, lane int) int { return gutterX[g] + dgGap/2 + dgLane*lane }
	for t, rs := range incoming {
		tb := d.Boxes[t]
		step := dgLane
		if len(rs) > 1 {
			step = max(2, min(dgLane, (tb.H-dgTitleH/2-6)/len(rs)))
		}
		for i, r := range rs {
			sb := d.Boxes[r.src]
			sy := sb.Y + sb.fieldY[r.arrow.Path]
			ey := tb.Y + dgTitleH/2 + i*step
			x1 := laneX(r.exitG, r.exitL)
			pts := [][2]int{{sb.X + sb.W, sy}, {x1, sy}}
			if r.direct {
				pts = append(pts, [2]int{x1, ey})
			} else {
				cy := chanY[tb.Row] + dgGap/2 + dgLane*r.chanL
				x2 := laneX(r.entryG, r.entryL)
				pts = append(pts, [2]int{x1, cy}, [2]int{x2, cy}, [2]int{x2, ey})
			}
			pts = append(pts, [2]int{tb.X, ey})
			d.Arrows = append(d.Arrows, DiagramArrow{From: r.arrow.From, To: r.arrow.To, Path: r.arrow.Path, Ids: r.arrow.Ids, Points: pts})
		}
	}
	// Arrows in the model's order (incoming is a map).
	order := map[string]int{}
	for i, r := range routes {
		order[fmt.Sprintf("%d\x00%s\x00%s", r.src, r.arrow.Path, r.arrow.To)] = i
	}
	sortArrows(d.Arrows, func(a DiagramArrow) int {
		return order[fmt.Sprintf("%d\x00%s\x00%s", index[a.From], a.Path, a.To)]
	})
	// The legend, left to right.
	lx := 10
	for _, l := range []struct{ text, class string }{
		{"key: indexed field (gold: unique)", "legend key"},
		{"diamond: shard key", "legend shard"},
		{"arrow: reference", "legend ref"},
		{"dashed arrow: id array", "legend ids"},
	} {
		w := textWidth(l.text, pxSmall, false)
		d.Legend = append(d.Legend, DiagramLabel{X: lx, Y: 18, W: w, Text: l.text, Class: l.class})
		lx += dgMarkW + w + 36
	}
	d.W = max(d.W, lx)
	return d
}

func sortArrows(as []DiagramArrow, key func(DiagramArrow) int) {
	for i := 1; i < len(as); i++ {
		for j := i; j > 0 && key(as[j]) < key(as[j-1]); j-- {
			as[j], as[j-1] = as[j-1], as[j]
		}
	}
}

// diagramCSS styles the diagram's classes.
const diagramCSS = `svg.model{background:#fff;border:1px solid #d5dbe5}
svg.model text{font-family:system-ui,-apple-system,"Segoe UI",sans-serif}
svg.model rect.m-box{fill:#f4f7fb;stroke:#1e3a5f;stroke-width:1.5}svg.model rect.m-title{fill:#1e3a5f}
svg.model text.title{fill:#fff;font-size:13px;font-weight:700}svg.model text.entry{fill:#3b4456;font-size:11px}
svg.model text.field{fill:#1d2330;font-size:12px}svg.model text.stat{fill:#5a6478;font-size:11px}
svg.model text.more{fill:#8a94a6;font-size:11px;font-style:italic}svg.model text.legend{fill:#3b4456;font-size:11px}
svg.model rect.m-nest{fill:#e8f3ea;stroke:#2e7d32}svg.model rect.m-nest.object{fill:#efe9f6;stroke:#6a4c93}svg.model rect.m-nest.items{fill:#fff4e0;stroke:#b26a00}
svg.model text.nested{font-weight:700}
svg.model path.m-arrow{fill:none;stroke:#5a6478;stroke-width:1.5}svg.model path.m-arrow.ids{stroke:#b26a00;stroke-dasharray:5 3}
`

// WriteSVG writes d as one <svg> element (class "model"), with data-
// attributes naming what each part draws: data-collection on a box's
// group, data-in on a label (its collection), data-from, data-to and
// data-field on an arrow.
func (d *Diagram) WriteSVG(w io.Writer) error {
	e := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="model" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="document model">`+"\n", d.W, d.H, d.W, d.H)
	b.WriteString(`<defs><marker id="m-head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#5a6478"/></marker>` +
		`<marker id="m-head-ids" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#b26a00"/></marker></defs>` + "\n")
	// The legend: each label after its symbol.
	for _, l := range d.Legend {
		sx := l.X
		switch {
		case strings.HasSuffix(l.Class, "key"):
			writeKey(&b, sx+4, l.Y-4, true)
		case strings.HasSuffix(l.Class, "shard"):
			writeDiamond(&b, sx+4, l.Y-4)
		case strings.HasSuffix(l.Class, "ref"):
			fmt.Fprintf(&b, `<path class="m-arrow" d="M%d,%d H%d" marker-end="url(#m-head)"/>`, sx-8, l.Y-4, sx+12)
		case strings.HasSuffix(l.Class, "ids"):
			fmt.Fprintf(&b, `<path class="m-arrow ids" d="M%d,%d H%d" marker-end="url(#m-head-ids)"/>`, sx-8, l.Y-4, sx+12)
		}
		fmt.Fprintf(&b, `<text class="legend m-label" data-in="" x="%d" y="%d">%s</text>`+"\n", sx+dgMarkW, l.Y, e(l.Text))
	}
	for _, bx := range d.Boxes {
		fmt.Fprintf(&b, `<g class="m-coll" data-collection="%s">`, e(bx.Name))
		fmt.Fprintf(&b, `<rect class="m-box" x="%d" y="%d" width="%d" height="%d" rx="6"/>`, bx.X, bx.Y, bx.W, bx.H)
		fmt.Fprintf(&b, `<path class="m-title" d="M%d,%d h%d v%d h-%d z" fill="#1e3a5f"/>`, bx.X, bx.Y, bx.W, dgTitleH, bx.W)
		for _, n := range bx.Nests {
			fmt.Fprintf(&b, `<rect class="m-nest %s" data-path="%s" x="%d" y="%d" width="%d" height="%d" rx="4"/>`, n.Kind, e(n.Path), n.X, n.Y, n.W, n.H)
		}
		for _, m := range bx.Marks {
			if m.Shard {
				writeDiamond(&b, m.X, m.Y)
			} else {
				writeKey(&b, m.X, m.Y, m.Unique)
			}
		}
		for _, l := range bx.Labels {
			cls := l.Class
			if l.Class == "field" && isNestLabel(bx, l) {
				cls += " nested"
			}
			fmt.Fprintf(&b, `<text class="%s m-label" data-in="%s" x="%d" y="%d">%s</text>`, cls, e(bx.Name), l.X, l.Y, e(l.Text))
		}
		b.WriteString("</g>\n")
	}
	for _, a := range d.Arrows {
		cls, head := "m-arrow", "m-head"
		if a.Ids {
			cls, head = "m-arrow ids", "m-head-ids"
		}
		var p strings.Builder
		for i, pt := range a.Points {
			if i == 0 {
				fmt.Fprintf(&p, "M%d,%d", pt[0], pt[1])
			} else {
				fmt.Fprintf(&p, " L%d,%d", pt[0], pt[1])
			}
		}
		fmt.Fprintf(&b, `<path class="%s" data-from="%s" data-to="%s" data-field="%s" d="%s" marker-end="url(#%s)"/>`+"\n", cls, e(a.From), e(a.To), e(a.Path), p.String(), head)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// isNestLabel says l is the name line of one of bx's nested boxes.
func isNestLabel(bx *DiagramBox, l DiagramLabel) bool {
	for _, n := range bx.Nests {
		if l.Y > n.Y && l.Y <= n.Y+dgRowH+2 && l.X > n.X && l.X <= n.X+dgMarkW+dgPad {
			return true
		}
	}
	return false
}

// writeKey draws a key centred near x, y: a ring and a shaft with a tooth.
func writeKey(b *strings.Builder, x, y int, unique bool) {
	colour := "#5a6478"
	if unique {
		colour = "#c99700"
	}
	fmt.Fprintf(b, `<g class="m-key" stroke="%s" stroke-width="1.6" fill="none"><circle cx="%d" cy="%d" r="2.6"/><path d="M%d,%d h6 m-2,0 v2.5 m-2,-2.5 v2"/></g>`,
		colour, x-2, y, x+1, y)
}

// writeDiamond draws a shard key's diamond centred near x, y.
func writeDiamond(b *strings.Builder, x, y int) {
	fmt.Fprintf(b, `<path class="m-shard" d="M%d,%d l4,4 l-4,4 l-4,-4 z" fill="#d84315"/>`, x+4, y-4)
}

// ModelSVG lays out m and writes it as one <svg> element (Layout,
// WriteSVG), for an HTML page that styles it with diagramCSS.
func ModelSVG(w io.Writer, m *Model) error { return Layout(m).WriteSVG(w) }

// WriteModelSVG writes m's diagram as a standalone SVG file: the element
// with its namespace and its style.
func WriteModelSVG(w io.Writer, m *Model) error {
	var b strings.Builder
	if err := ModelSVG(&b, m); err != nil {
		return err
	}
	svg := strings.Replace(b.String(), `<svg class="model" `, `<svg xmlns="http://www.w3.org/2000/svg" class="model" `, 1)
	i := strings.Index(svg, ">\n") + 2
	_, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+svg[:i]+"<style>\n"+diagramCSS+"</style>\n"+svg[i:])
	return err
}

// WriteModelPage writes m's diagram as a self-contained HTML page (no
// script, no network) titled title: what advise --diagram writes.
func WriteModelPage(w io.Writer, title, note string, m *Model) error {
	var b strings.Builder
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>%s</title>\n<style>\nbody{font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",sans-serif;margin:24px;color:#1d2330;background:#fafbfc}\nh1{font-size:22px;margin:0 0 4px}.note{color:#5a6478}div.model{overflow:auto}\n%s</style></head><body>\n<h1>%s</h1>\n<p class=\"note\">%s</p>\n<div class=\"model\">", html.EscapeString(title), diagramCSS, html.EscapeString(title), html.EscapeString(note))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if err := ModelSVG(w, m); err != nil {
		return err
	}
	_, err := io.WriteString(w, "</div>\n</body></html>\n")
	return err
}
