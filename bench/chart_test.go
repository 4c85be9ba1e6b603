package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// barsOf parses the chart's SVG: every bar's series, value and width, and
// the group (by order of appearance) it is in.
type svgBar struct {
	series string
	value  float64
	width  int
}

func svgBars(t *testing.T, svg []byte) []svgBar {
	t.Helper()
	var out []svgBar
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("the chart is not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "rect" {
			continue
		}
		var b svgBar
		isBar := false
		for _, a := range se.Attr {
			switch a.Name.Local {
			case "data-series":
				b.series, isBar = a.Value, true
			case "data-value":
				b.value, _ = strconv.ParseFloat(a.Value, 64)
			case "width":
				b.width, _ = strconv.Atoi(a.Value)
			}
		}
		if isBar {
			out = append(out, b)
		}
	}
}

// floorOf is the denorm run each floor is the floor of.
var floorOf = map[string]string{"floor": "A", "blogFloor": "blogA", "wideFloor": "wideA", "KintFloor": "Kint", "KpairFloor": "Kpair", "KuuidFloor": "Kuuid"}

// TestChartOfCommittedResults draws the committed bench/results.json and
// checks that every series is drawn, each bar's length is its value on
// its group's scale, and the floors are compared in documents.
func TestChartOfCommittedResults(t *testing.T) {
	data, err := os.ReadFile("results.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	c := layoutChart(&rep)
	drawn := map[string]bool{}
	for _, g := range c.Groups {
		top := 0.0
		for _, b := range g.Bars {
			top = math.Max(top, b.Value)
		}
		for _, b := range g.Bars {
			drawn[b.Series] = true
			// 7 px a character at 12 px is wide for the fonts used.
			if len(b.Label)*7 > chartLabelW-10 {
				t.Errorf("label %q is too long for the label column (%d px)", b.Label, chartLabelW)
			}
			if want := int(math.Round(chartBarMax * b.Value / top)); b.W != want {
				t.Errorf("%s: bar %s is %d px for %g (group's largest %g), want %d", g.Title, b.Series, b.W, b.Value, top, want)
			}
			s := rep.Series[b.Series]
			var want float64
			switch {
			case b.Kind == "memory":
				want = s.PeakMiB
			case strings.HasPrefix(b.Series, "typed:"):
				// The typed benchmark: a family's time over its floor's.
				i := slices.IndexFunc(rep.Typed.Families, func(f *TypedFamily) bool { return "typed:"+f.Family == b.Series })
				want = rep.Typed.Families[i].Scales[0].Ratio
			case floorOf[b.Series] != "":
				// A floor reads rows: drawn as its run's documents in
				// the floor's time.
				want = float64(rep.Series[floorOf[b.Series]].Median.Docs) / s.Median.Seconds
			default:
				want = s.DocsPS
			}
			if math.Abs(b.Value-want) > 1e-6*want {
				t.Errorf("%s: bar %s has %g, want %g", g.Title, b.Series, b.Value, want)
			}
		}
	}
	for name, s := range rep.Series {
		if !drawn[name] {
			t.Errorf("series %s (%s) is not drawn", name, s.What)
		}
	}
	if rep.Typed != nil {
		for _, f := range rep.Typed.Families {
			if !drawn["typed:"+f.Family] {
				t.Errorf("typed family %s is not drawn", f.Family)
			}
		}
	}
	var buf bytes.Buffer
	if err := c.writeSVG(&buf); err != nil {
		t.Fatal(err)
	}
	bars := svgBars(t, buf.Bytes())
	n := 0
	for _, g := range c.Groups {
		for _, b := range g.Bars {
			if n >= len(bars) || bars[n].series != b.Series || bars[n].width != b.W || math.Abs(bars[n].value-b.Value) > 1e-3*b.Value {
				t.Fatalf("the SVG's bar %d is %+v, want %s %g %d px", n, bars[n], b.Series, b.Value, b.W)
			}
			n++
		}
	}
	if n != len(bars) {
		t.Errorf("the SVG has %d bars, the chart %d", len(bars), n)
	}
	// docs/images/bench.svg is this chart (make bench-chart made it).
	committed, err := os.ReadFile("../docs/images/bench.svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, buf.Bytes()) {
		t.Error("docs/images/bench.svg is not the chart of bench/results.json: run make bench-chart")
	}
}

// Values scale linearly within a group; a series no group names gets a
// group of its own; a run with a peak has a memory bar.
func TestChartScales(t *testing.T) {
	rep := &Report{Config: map[string]int{"scale": 10}, Series: map[string]*Series{
		"A":     {Name: "A", Median: Result{Docs: 1000, Seconds: 1}, DocsPS: 1000, PeakMiB: 50},
		"B":     {Name: "B", Median: Result{Docs: 1000, Seconds: 4}, DocsPS: 250},
		"floor": {Name: "floor", Median: Result{Docs: 4000, Seconds: 0.5}, DocsPS: 8000},
		"Znew":  {Name: "Znew", Median: Result{Docs: 10, Seconds: 1}, DocsPS: 10},
		"F4":    {Name: "F4", Median: Result{Docs: 4000, Seconds: 4}, DocsPS: 1000, PeakMiB: 100},
	}}
	c := layoutChart(rep)
	width := map[string]int{}
	for _, g := range c.Groups {
		for _, b := range g.Bars {
			width[g.Title[:4]+b.Series] = b.W
		}
	}
	// person: floor = 1000 docs / 0.5 s = 2000 docs/s, the longest.
	for key, want := range map[string]int{"persA": 200, "persfloor": 400, "persB": 50, "otheZnew": 400, "peakA": 200, "peakF4": 400} {
		if width[key] != want {
			t.Errorf("bar %s is %d px, want %d (all: %v)", key, width[key], want, width)
		}
	}
}
