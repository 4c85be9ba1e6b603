package main

// Prometheus metrics of a running migration (migrate --metrics-addr), as
// sync's (metrics.go): the same registry and server, names
// denorm_migrate_*, the label job_name (--job; empty without one).

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
)

type migrateMetrics struct {
	rows         *prometheus.CounterVec
	written      *prometheus.CounterVec
	rejects      *prometheus.CounterVec
	bytesRead    prometheus.CounterFunc
	bytesWritten prometheus.CounterFunc
	snapshotAge  prometheus.GaugeFunc
	eta          prometheus.Gauge
	progress     prometheus.Gauge
	estimated    prometheus.Gauge
	lastProgress prometheus.Gauge
	// collectors are what reg holds besides the process collector.
	collectors []prometheus.Collector
	reg        *prometheus.Registry
	srv        *http.Server

	// src is the source whose connections' bytes are read (set once the
	// snapshot is open); wrote counts the target's bytes (load.Options.Written).
	src   atomic.Pointer[extract.Source]
	wrote atomic.Int64

	mu sync.Mutex // guards what follows
	// entries are the plan's collection entries in order, with what was
	// last heard of each (Stats: counted so far, the prior runs' included).
	entries []*entryMetrics
	// taken is when the snapshot being read was taken (zero: none yet).
	taken time.Time
	// started is when loading started (the rate's clock); zero before.
	started time.Time
}

// entryMetrics is one collection entry of the plan as the metrics know it.
type entryMetrics struct {
	collection, table string
	// label is the table's label: schema.table, as sync's
	label    string
	estimate int64 // the root table's row estimate (-1: unknown)
	heard    bool
	last     pipeline.Stats // what the counters hold of it (this run's part)
}

// serveMigrateMetrics starts serving migrate's metrics on addr until close.
func serveMigrateMetrics(ctx context.Context, addr, job string) (*migrateMetrics, error) {
	m := newMigrateMetrics(job)
	srv, err := serveRegistry(ctx, addr, m.reg)
	if err != nil {
		return nil, err
	}
	m.srv = srv
	return m, nil
}

// newMigrateMetrics makes migrate's metrics and their registry (not served).
func newMigrateMetrics(job string) *migrateMetrics {
	labels := prometheus.Labels{"job_name": job}
	m := &migrateMetrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "denorm_migrate_rows_read_total",
			Help: "Source rows read by this run, by table (schema.table): the root rows of each collection (a bucket collection: its item rows); the rows of embedded tables are read with them.", ConstLabels: labels}, []string{"table"}),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "denorm_migrate_documents_written_total",
			Help: "Documents this run wrote that the target acknowledged, by collection (a bucket collection: its pages).", ConstLabels: labels}, []string{"collection"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "denorm_migrate_rejects_total",
			Help: "Rows and documents this run rejected (--rejects), by collection: a row that could not become a document, a document the target refused or over --max-doc-size.", ConstLabels: labels}, []string{"collection"}),
		eta: prometheus.NewGauge(prometheus.GaugeOpts{Name: "denorm_migrate_eta_seconds",
			Help: "Estimated seconds until every collection is read: the source rows left (the catalog's estimates, or what was read when more) at this run's rate so far; -1 while unknown (no rate yet, or no estimate); 0 once done.", ConstLabels: labels}),
		progress: prometheus.NewGauge(prometheus.GaugeOpts{Name: "denorm_migrate_progress_ratio",
			Help: "Fraction of the migration's source rows read, 0 to 1 (the rows of earlier runs of a resumed job included), against the catalog's estimates; 1 once done.", ConstLabels: labels}),
		estimated: prometheus.NewGauge(prometheus.GaugeOpts{Name: "denorm_migrate_rows_estimated",
			Help: "Source rows the migration reads in all, as estimated: the catalog's estimate of each collection's root table, or the rows read when more (or when the collection is done).", ConstLabels: labels}),
		lastProgress: prometheus.NewGauge(prometheus.GaugeOpts{Name: "denorm_migrate_last_progress_timestamp_seconds",
			Help: "Unix time of the last batch acknowledged by the target (0: none yet).", ConstLabels: labels}),
	}
	m.bytesRead = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "denorm_migrate_source_bytes_read_total",
		Help: "Bytes read from the source's connections (snapshot readers; the wire's bytes, protocol included).", ConstLabels: labels}, func() float64 {
		if s := m.src.Load(); s != nil {
			return float64(s.BytesRead())
		}
		return 0
	})
	m.bytesWritten = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "denorm_migrate_target_bytes_written_total",
		Help: "Bytes of the documents written and acknowledged: their BSON for a server, their JSON lines for a directory target.", ConstLabels: labels}, func() float64 {
		return float64(m.wrote.Load())
	})
	m.snapshotAge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "denorm_migrate_snapshot_age_seconds",
		Help: "Lag behind the source: seconds since the source snapshot the run reads was taken (documents written reflect the source as of then); 0 before it is open.", ConstLabels: labels}, m.snapshotAgeNow)
	m.eta.Set(-1)
	m.collectors = []prometheus.Collector{m.rows, m.written, m.rejects, m.bytesRead, m.bytesWritten, m.snapshotAge, m.eta, m.progress, m.estimated, m.lastProgress}
	m.reg = newRegistry(m.collectors...)
	return m
}

func (m *migrateMetrics) snapshotAgeNow() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.taken.IsZero() {
		return 0
	}
	return time.Since(m.taken).Seconds()
}

// opened records the snapshot the run reads and the plan's entries.
func (m *migrateMetrics) opened(snap *extract.Snapshot, plan *mappings.Plan) {
	m.src.Store(snap.Source())
	m.mu.Lock()
	defer m.mu.Unlock()
	m.taken = snap.Taken
	m.entries = m.entries[:0]
	for _, cp := range plan.Collections {
		t := cp.Root.Table
		e := &entryMetrics{collection: cp.Name, table: t.Name, label: t.Schema + "." + t.Name, estimate: t.Estimate}
		m.entries = append(m.entries, e)
		// Every series exists from the start, at 0.
		m.rows.WithLabelValues(e.label)
		m.written.WithLabelValues(e.collection)
		m.rejects.WithLabelValues(e.collection)
	}
	m.estimate()
}

// hook returns progress (the pipeline's Progress hook) that also counts
// into m, from now on the start of loading.
func (m *migrateMetrics) hook(progress func(pipeline.Stats)) func(pipeline.Stats) {
	m.mu.Lock()
	m.started = time.Now()
	m.mu.Unlock()
	return func(s pipeline.Stats) {
		m.update(s)
		if progress != nil {
			progress(s)
		}
	}
}

// update counts what s adds to the entry's last update (the pipeline's
// Progress hook).
func (m *migrateMetrics) update(s pipeline.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count(s)
	m.estimate()
	if s.RunWritten() > 0 || s.RunRows() > 0 {
		m.lastProgress.Set(float64(time.Now().UnixNano()) / 1e9)
	}
}

// final counts the run's last figures (the summary's), also of entries
// whose last batch no Progress call reported (an interrupted run).
func (m *migrateMetrics) final(stats []pipeline.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range stats {
		m.count(s)
	}
	m.estimate()
}

// count adds to the counters this run's work in s beyond what they hold
// of its entry.
func (m *migrateMetrics) count(s pipeline.Stats) {
	e := m.entry(s)
	if !s.Snapshot.IsZero() {
		m.taken = s.Snapshot
	}
	if d := s.RunRows() - e.last.RunRows(); d > 0 {
		m.rows.WithLabelValues(e.label).Add(float64(d))
	}
	if d := s.RunWritten() - e.last.RunWritten(); d > 0 {
		m.written.WithLabelValues(s.Collection).Add(float64(d))
	}
	if d := s.RunFailed() - e.last.RunFailed(); d > 0 {
		m.rejects.WithLabelValues(s.Collection).Add(float64(d))
	}
	// (Series of entries the plan did not name exist from their first
	// update on.)
	m.rows.WithLabelValues(e.label)
	m.written.WithLabelValues(s.Collection)
	m.rejects.WithLabelValues(s.Collection)
	e.last, e.heard = s, true
}

// entry is s's entry, added when the plan did not name it.
func (m *migrateMetrics) entry(s pipeline.Stats) *entryMetrics {
	for _, e := range m.entries {
		if e.collection == s.Collection && e.table == s.Table {
			return e
		}
	}
	e := &entryMetrics{collection: s.Collection, table: s.Table, label: s.Table, estimate: s.Estimate}
	m.entries = append(m.entries, e)
	return e
}

// estimate sets the rows estimated, the progress ratio and the ETA from
// the entries.
func (m *migrateMetrics) estimate() {
	var total, read, runRows int64
	unknown, done := false, true
	// The entries are loaded in order: one not heard of before the last
	// heard of was done by an earlier run of the job (the pipeline reports
	// no progress of those).
	lastHeard := -1
	for i, e := range m.entries {
		if e.heard {
			lastHeard = i
		}
	}
	for i, e := range m.entries {
		n := e.estimate
		if e.heard {
			if e.last.Estimate > 0 {
				n = e.last.Estimate
			}
			read += e.last.Rows
			runRows += e.last.RunRows()
			if e.last.Done || e.last.Rows > n {
				n = e.last.Rows
			}
		} else if i < lastHeard {
			n = max(n, 0)
			read += n
		}
		done = done && e.heard && e.last.Done
		if n < 0 {
			unknown, n = true, 0
		}
		total += n
	}
	m.estimated.Set(float64(total))
	switch {
	case done && len(m.entries) > 0:
		m.progress.Set(1)
		m.eta.Set(0)
		return
	case total > 0:
		m.progress.Set(min(1, float64(read)/float64(total)))
	default:
		m.progress.Set(0)
	}
	elapsed := time.Duration(0)
	if !m.started.IsZero() {
		elapsed = time.Since(m.started)
	}
	r := rate(runRows, elapsed)
	if unknown || r <= 0 {
		m.eta.Set(-1)
		return
	}
	m.eta.Set(float64(max(0, total-read)) / r)
}

func (m *migrateMetrics) close() { closeServer(m.srv) }
