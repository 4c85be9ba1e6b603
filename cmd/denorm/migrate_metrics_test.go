package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/pipeline"
)

// scrape reads the metrics served at addr.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape %s: %s\n%s", addr, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	return fams
}

// metricValue is the value of family name's series whose labels include
// want (summed over the series that match), and whether there is one.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	var sum float64
	found := false
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, found
}

// TestMigrateMetrics: migrate --metrics-addr serves, while the run lasts,
// every migrate metric with the job's label: held at its checkpoints (the
// checkpoint gate), a scrape shows rows read, documents written and
// rejects growing, bytes read and written, the snapshot's age, a progress
// fraction below 1 and an ETA; at the last checkpoint, once every
// collection is loaded, the counters equal the summary's counts, the
// progress is 1 and the ETA 0. The process collector's metrics are there.
func TestMigrateMetrics(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	src := personsDB(t, 3000)
	target, _ := testenv.MongoDB(t)
	dir := t.TempDir()
	summary := filepath.Join(dir, "summary.json")
	addr := testenv.ClosedPort(t)
	// A --max-doc-size that the persons with an address pass and the
	// ones without do not (generated persons: 2 contact details each, an
	// address for 2 out of 3): rejects on every batch.
	args := []string{"migrate", "--progress", "none", "--mapping", example(t, "person"), "--source", src, "--target", target,
		"--job", "metered", "--batch-size", "50", "--metrics-addr", addr, "--summary-file", summary,
		"--max-doc-size", fmt.Sprint(metricsDocLimit), "--rejects", filepath.Join(dir, "rejects.jsonl")}
	g := startGated(t, bin, args...)

	job := map[string]string{"job_name": "metered"}
	names := []string{"denorm_migrate_rows_read_total", "denorm_migrate_documents_written_total", "denorm_migrate_rejects_total",
		"denorm_migrate_source_bytes_read_total", "denorm_migrate_target_bytes_written_total", "denorm_migrate_snapshot_age_seconds",
		"denorm_migrate_eta_seconds", "denorm_migrate_progress_ratio", "denorm_migrate_rows_estimated", "denorm_migrate_last_progress_timestamp_seconds"}
	var (
		mid, last map[string]*dto.MetricFamily
		held      int
		eta       []float64 // the ETAs scraped while the run had rows left
	)
	for c := g.next(); c != nil; c = g.next() {
		held++
		fams := scrape(t, addr)
		rows, _ := metricValue(fams, "denorm_migrate_rows_read_total", map[string]string{"table": "public.person"})
		if mid == nil && rows >= 1000 && rows < 3000 {
			mid = fams
			time.Sleep(1100 * time.Millisecond) // past rateAfter: the next scrapes have an ETA
		}
		if p, _ := metricValue(fams, "denorm_migrate_progress_ratio", job); p < 1 {
			e, _ := metricValue(fams, "denorm_migrate_eta_seconds", job)
			eta = append(eta, e)
		}
		last = fams
		g.release()
	}
	code := g.wait()
	out := g.output()
	if mid == nil {
		t.Fatalf("no checkpoint held with 1000 to 3000 persons read (%d held); exit %d:\n%s", held, code, out)
	}
	if code != exitRejected {
		t.Errorf("exit %d, want %d (rows rejected):\n%s", code, exitRejected, out)
	}
	for _, n := range names {
		if _, ok := metricValue(mid, n, job); !ok {
			t.Errorf("mid-run: %s missing (or without job_name=metered)", n)
		}
	}
	for _, n := range []string{"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} {
		if _, ok := metricValue(mid, n, nil); !ok {
			t.Errorf("mid-run: the process collector's %s missing", n)
		}
	}
	v := func(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
		want := map[string]string{"job_name": "metered"}
		for i := 0; i+1 < len(labels); i += 2 {
			want[labels[i]] = labels[i+1]
		}
		x, _ := metricValue(fams, name, want)
		return x
	}
	rows, docs, rej := v(mid, "denorm_migrate_rows_read_total", "table", "public.person"), v(mid, "denorm_migrate_documents_written_total", "collection", "people"), v(mid, "denorm_migrate_rejects_total", "collection", "people")
	if docs <= 0 || rej <= 0 || docs+rej != rows {
		t.Errorf("mid-run: %v rows read, %v documents written, %v rejected; want both > 0, adding up to the rows", rows, docs, rej)
	}
	if p := v(mid, "denorm_migrate_progress_ratio"); p <= 0 || p >= 1 {
		t.Errorf("mid-run: progress %v, want between 0 and 1", p)
	}
	if e := v(mid, "denorm_migrate_rows_estimated"); e < 2000 || e > 4000 {
		t.Errorf("mid-run: %v rows estimated for 3,000 persons and the seed's", e)
	}
	if b := v(mid, "denorm_migrate_source_bytes_read_total"); b < 20*rows {
		t.Errorf("mid-run: %v bytes read for %v persons and their details", b, rows)
	}
	if b := v(mid, "denorm_migrate_target_bytes_written_total"); b < 50*docs {
		t.Errorf("mid-run: %v bytes written for %v documents", b, docs)
	}
	if a := v(mid, "denorm_migrate_snapshot_age_seconds"); a <= 0 || a > 600 {
		t.Errorf("mid-run: snapshot age %v s", a)
	}
	if n := len(eta); n < 2 || eta[n-1] <= 0 || eta[n-1] > 3600 {
		t.Errorf("the ETAs scraped while rows were left: %v; want the last one a few seconds", eta)
	}
	if ts := v(mid, "denorm_migrate_last_progress_timestamp_seconds"); time.Since(time.Unix(int64(ts), 0)) > 10*time.Minute {
		t.Errorf("mid-run: last progress at %v", ts)
	}

	// The last checkpoint held: every collection loaded.
	var sum summaryFile
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Run.Failed == 0 || sum.Run.Documents == 0 {
		t.Fatalf("the summary counts %+v: the test wants rejects and documents", sum.Run)
	}
	for _, c := range sum.Collections {
		if got := v(last, "denorm_migrate_rows_read_total", "table", "public."+c.Table); got != float64(c.Run.Rows) {
			t.Errorf("%s: %v rows read at the end, the summary says %d", c.Table, got, c.Run.Rows)
		}
		if got := v(last, "denorm_migrate_documents_written_total", "collection", c.Collection); got != float64(c.Run.Documents) {
			t.Errorf("%s: %v documents written at the end, the summary says %d", c.Collection, got, c.Run.Documents)
		}
		if got := v(last, "denorm_migrate_rejects_total", "collection", c.Collection); got != float64(c.Run.Failed) {
			t.Errorf("%s: %v rejects at the end, the summary says %d", c.Collection, got, c.Run.Failed)
		}
	}
	if p, e := v(last, "denorm_migrate_progress_ratio"), v(last, "denorm_migrate_eta_seconds"); p != 1 || e != 0 {
		t.Errorf("at the end: progress %v, ETA %v s; want 1 and 0", p, e)
	}
	if e := v(last, "denorm_migrate_rows_estimated"); e != float64(sum.JobTotal.Rows) {
		t.Errorf("at the end: %v rows estimated, %d read", e, sum.JobTotal.Rows)
	}
	if bm, bl := v(mid, "denorm_migrate_target_bytes_written_total"), v(last, "denorm_migrate_target_bytes_written_total"); bl <= bm {
		t.Errorf("bytes written did not grow: %v then %v", bm, bl)
	}
	t.Logf("mid-run: %v rows, %v documents, %v rejected, progress %.2f; %d ETAs scraped, the last ones %.2f; end: %+v, %v bytes read, %v written, snapshot %.2f s old", rows, docs, rej,
		v(mid, "denorm_migrate_progress_ratio"), len(eta), eta[max(0, len(eta)-3):], sum.Run, v(last, "denorm_migrate_source_bytes_read_total"),
		v(last, "denorm_migrate_target_bytes_written_total"), v(last, "denorm_migrate_snapshot_age_seconds"))
	if !strings.Contains(out, "people") {
		t.Errorf("no summary printed:\n%s", out)
	}
}

// metricsDocLimit is TestMigrateMetrics's --max-doc-size (bytes).
const metricsDocLimit = 300

// TestMigrateMetricsCounts: the counters count this run's work alone
// (after a resume, not the earlier runs'), each batch once however often
// the same figures are reported; the progress ratio counts the job's rows,
// an entry done by an earlier run (of which the pipeline reports nothing)
// included; the ETA is unknown (-1) until a rate is known, 0 once done.
func TestMigrateMetricsCounts(t *testing.T) {
	m := newMigrateMetrics("j")
	m.entries = []*entryMetrics{
		{collection: "a", table: "ta", label: "public.ta", estimate: 100},
		{collection: "b", table: "tb", label: "public.tb", estimate: 300},
		{collection: "c", table: "tc", label: "public.tc", estimate: -1},
	}
	read := func(name string, labels ...string) float64 {
		fams, err := m.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]*dto.MetricFamily{}
		for _, f := range fams {
			byName[f.GetName()] = f
		}
		want := map[string]string{"job_name": "j"}
		for i := 0; i+1 < len(labels); i += 2 {
			want[labels[i]] = labels[i+1]
		}
		v, _ := metricValue(byName, name, want)
		return v
	}
	if e := read("denorm_migrate_eta_seconds"); e != -1 {
		t.Errorf("ETA %v before any progress, want -1", e)
	}
	progress := m.hook(nil)
	// Entry a was done by an earlier run; b resumes after 100 rows.
	b := pipeline.Stats{Collection: "b", Table: "tb", Estimate: 300, Rows: 150, Written: 140, Failed: 10, PriorRows: 100, PriorWritten: 95, PriorFailed: 5}
	progress(b)
	progress(b) // the same figures again count nothing
	if r, w, f := read("denorm_migrate_rows_read_total", "table", "public.tb"), read("denorm_migrate_documents_written_total", "collection", "b"), read("denorm_migrate_rejects_total", "collection", "b"); r != 50 || w != 45 || f != 5 {
		t.Errorf("b: %v rows, %v documents, %v rejects; want this run's 50, 45, 5", r, w, f)
	}
	// 100 (a, done before) + 150 of 100 + 300 + c unknown (0).
	if p := read("denorm_migrate_progress_ratio"); p != 250.0/400 {
		t.Errorf("progress %v, want %v", p, 250.0/400)
	}
	if e := read("denorm_migrate_eta_seconds"); e != -1 {
		t.Errorf("ETA %v with c's size unknown, want -1", e)
	}
	b.Rows, b.Written, b.Done = 300, 290, true
	progress(b)
	progress(pipeline.Stats{Collection: "c", Table: "tc", Estimate: -1, Rows: 7, Written: 7, Done: true})
	m.final([]pipeline.Stats{{Collection: "a", Table: "ta", Estimate: 100, Rows: 100, Written: 100, PriorRows: 100, PriorWritten: 100, Done: true}, b,
		{Collection: "c", Table: "tc", Estimate: -1, Rows: 7, Written: 7, Done: true}})
	if r, w := read("denorm_migrate_rows_read_total", "table", "public.tb"), read("denorm_migrate_documents_written_total", "collection", "b"); r != 200 || w != 195 {
		t.Errorf("b done: %v rows, %v documents; want 200, 195", r, w)
	}
	if r := read("denorm_migrate_rows_read_total", "table", "public.ta"); r != 0 {
		t.Errorf("a, done before this run: %v rows read by it", r)
	}
	if p, e, n := read("denorm_migrate_progress_ratio"), read("denorm_migrate_eta_seconds"), read("denorm_migrate_rows_estimated"); p != 1 || e != 0 || n != 407 {
		t.Errorf("done: progress %v, ETA %v, %v rows estimated; want 1, 0, 407", p, e, n)
	}
}
