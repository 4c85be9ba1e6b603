package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/pipeline/syncer"
)

// dashboardUnused are the metric families the dashboard leaves out on
// purpose; every other family migrate or sync exports is in a panel.
var dashboardUnused = map[string]string{
	// The address-space limit (ulimit -v): unlimited almost everywhere,
	// nothing to watch during a run.
	"process_virtual_memory_max_bytes": "the process's address-space limit",
}

// exportedFamily is a metric family migrate or sync serves: its type, the
// names of its series (a histogram's _bucket, _sum and _count) and its
// labels (the ones Prometheus adds at scrape time, instance and job,
// included).
type exportedFamily struct {
	typ    dto.MetricType
	series []string
	labels map[string]bool
}

// exportedMetrics gathers the families of the real registries of migrate
// and sync, after giving every vector a series, and checks that nothing
// registered is left out of the gathering.
func exportedMetrics(t *testing.T) map[string]*exportedFamily {
	t.Helper()
	mm := newMigrateMetrics("j")
	mm.update(pipeline.Stats{Collection: "c", Table: "t", Rows: 2, Written: 1, Failed: 1, Estimate: 10})
	sm := newSyncMetrics("j", job.SyncLogical)
	sm.pass(syncer.PassStats{Method: job.SyncLogical, End: time.Now(),
		Tables:      map[string]*syncer.TableChanges{"t": {Inserts: 1, Skipped: 1, Documents: 2}},
		Collections: map[string]*syncer.DocCounts{"c": {Written: 1, Deleted: 1}},
		Spent:       syncer.Spent{Snapshot: time.Millisecond, Trace: time.Millisecond, Build: time.Millisecond, Write: time.Millisecond},
		TxLags:      []time.Duration{time.Second}})
	out := map[string]*exportedFamily{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, reg := range []struct {
		name       string
		reg        *prometheus.Registry
		collectors []prometheus.Collector
	}{{"migrate", mm.reg, mm.collectors}, {"sync", sm.reg, sm.collectors}} {
		fams, err := reg.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		gathered := map[string]bool{}
		for _, f := range fams {
			gathered[f.GetName()] = true
			e := &exportedFamily{typ: f.GetType(), labels: map[string]bool{"instance": true, "job": true}}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				e.series = []string{f.GetName() + "_bucket", f.GetName() + "_sum", f.GetName() + "_count"}
				e.labels["le"] = true
			case dto.MetricType_SUMMARY:
				e.series = []string{f.GetName(), f.GetName() + "_sum", f.GetName() + "_count"}
				e.labels["quantile"] = true
			default:
				e.series = []string{f.GetName()}
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					e.labels[l.GetName()] = true
				}
			}
			out[f.GetName()] = e
		}
		ch := make(chan *prometheus.Desc, 64)
		go func() {
			for _, c := range reg.collectors {
				c.Describe(ch)
			}
			close(ch)
		}()
		for d := range ch {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil || !gathered[m[1]] {
				t.Errorf("%s: %s is registered but not gathered: the test gives it no series", reg.name, d)
			}
		}
		if !gathered["process_cpu_seconds_total"] {
			t.Errorf("%s: no process collector", reg.name)
		}
	}
	return out
}

// promqlNotMetric are PromQL's keywords, which look like metric names.
var promqlNotMetric = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "offset": true, "and": true, "or": true, "unless": true, "inf": true, "nan": true, "atan2": true}

var (
	promqlString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	promqlIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	promqlSelector = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}`)
	promqlMatcher  = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)`)
)

// promqlMetrics are the metric names expr selects, and the label names
// its grouping clauses (by, without, on, ignoring) name.
func promqlMetrics(expr string) (metrics, grouping []string) {
	e := promqlString.ReplaceAllString(expr, `""`)
	for _, m := range promqlGrouping.FindAllStringSubmatch(e, -1) {
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				grouping = append(grouping, l)
			}
		}
	}
	e = promqlGrouping.ReplaceAllString(e, " ")
	e = promqlMatchers.ReplaceAllString(e, " ")
	e = promqlRange.ReplaceAllString(e, " ")
	for _, loc := range promqlIdent.FindAllStringIndex(e, -1) {
		name := e[loc[0]:loc[1]]
		if loc[0] > 0 && strings.ContainsRune("0123456789.$", rune(e[loc[0]-1])) {
			continue // a number's exponent, a Grafana variable
		}
		if rest := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") || promqlNotMetric[strings.ToLower(name)] {
			continue // a function or an aggregation, a keyword
		}
		metrics = append(metrics, name)
	}
	return metrics, grouping
}

func TestPromqlMetrics(t *testing.T) {
	m, g := promqlMetrics(`histogram_quantile(0.99, sum by (job_name, le) (rate(a_bucket{job_name=~"$job", x="b{c}"}[$__rate_interval]))) / on(job_name) group_left b_total offset 5m + 1e3 > bool 2 and time() - c`)
	if want := []string{"a_bucket", "b_total", "c"}; !slices.Equal(m, want) {
		t.Errorf("metrics %v, want %v", m, want)
	}
	if want := []string{"job_name", "le", "job_name"}; !slices.Equal(g, want) {
		t.Errorf("grouping %v, want %v", g, want)
	}
}

type grafanaPanel struct {
	Type    string         `json:"type"`
	Title   string         `json:"title"`
	Panels  []grafanaPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// TestGrafanaDashboard: deploy/grafana/denorm.json is a Grafana dashboard
// whose every query (panels, rows' panels, template variables) names only
// series that migrate or sync export, with labels they have; every family
// they export is in a panel, but the ones dashboardUnused names; the
// migrate and sync rows and the process panels are there.
func TestGrafanaDashboard(t *testing.T) {
	exported := exportedMetrics(t)
	series := map[string]*exportedFamily{}
	for _, f := range exported {
		for _, s := range f.series {
			series[s] = f
		}
	}
	b, err := os.ReadFile(repoPath(t, "deploy", "grafana", "denorm.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string         `json:"title"`
		UID        string         `json:"uid"`
		Panels     []grafanaPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/denorm.json: %v", err)
	}
	if dash.Title == "" || dash.UID == "" {
		t.Errorf("the dashboard has no title or uid")
	}
	used := map[string]bool{}
	check := func(where, expr string) {
		metrics, grouping := promqlMetrics(expr)
		if len(metrics) == 0 {
			t.Errorf("%s: %q selects no metric", where, expr)
		}
		labels := map[string]bool{}
		for _, m := range metrics {
			f := series[m]
			if f == nil {
				t.Errorf("%s: %q names %s, which neither migrate nor sync exports", where, expr, m)
				continue
			}
			used[m] = true
			for l := range f.labels {
				labels[l] = true
			}
		}
		for _, sel := range promqlSelector.FindAllStringSubmatch(promqlString.ReplaceAllStringFunc(expr, func(s string) string { return strings.Repeat("x", len(s)) }), -1) {
			f := series[sel[1]]
			if f == nil {
				continue
			}
			for _, m := range promqlMatcher.FindAllStringSubmatch(sel[2], -1) {
				if !f.labels[m[1]] {
					t.Errorf("%s: %q selects %s by label %s, which it does not have", where, expr, sel[1], m[1])
				}
			}
		}
		for _, l := range grouping {
			if !labels[l] {
				t.Errorf("%s: %q groups by %s, a label none of its metrics has", where, expr, l)
			}
		}
	}
	var titles []string
	queries := 0
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			titles = append(titles, p.Title)
			for _, tg := range p.Targets {
				queries++
				check("panel "+p.Title, tg.Expr)
			}
			if p.Type != "row" && len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	labelValues := regexp.MustCompile(`^label_values\(\s*(?:(.+?)\s*,\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\)$`)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			var s string
			if err := json.Unmarshal(v.Query, &s); err != nil {
				t.Fatalf("variable %s: unreadable query %s", v.Name, v.Query)
			}
			q.Query = s
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: %q is not label_values([metric,] label)", v.Name, q.Query)
			continue
		}
		if m[1] != "" {
			check("variable "+v.Name, m[1])
			if f := series[m[1]]; f != nil && !f.labels[m[2]] {
				t.Errorf("variable %s: %s has no label %s", v.Name, m[1], m[2])
			}
		}
	}
	var missing []string
	for name, f := range exported {
		in := slices.ContainsFunc(f.series, func(s string) bool { return used[s] })
		_, unused := dashboardUnused[name]
		switch {
		case !in && !unused:
			missing = append(missing, name)
		case in && unused:
			t.Errorf("%s is in a panel and in dashboardUnused", name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("exported metrics in no panel of deploy/grafana/denorm.json (add a panel, or to dashboardUnused with why): %v", missing)
	}
	for _, want := range []string{"migrate", "sync", "ETA", "Rejects", "Apply stage seconds / s", "Documents per change", "Replication slot WAL", "CPU", "Memory"} {
		if !slices.ContainsFunc(titles, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("no panel or row %q", want)
		}
	}
	t.Logf("%d panels and rows, %d queries, %d exported families (%d series names)", len(titles), queries, len(exported), len(series))
}
