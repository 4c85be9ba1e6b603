package main

// Prometheus metrics of a running sync or migrate (--metrics-addr), each
// on a registry of its own with the process collector (process_*: CPU,
// memory, open files) and no Go runtime collector: what is asked for is
// the job's health. Names are denorm_sync_* and denorm_migrate_*
// (migrate_metrics.go); the labels job_name (--job) and, for sync, method
// are on every series of the command's own. deploy/grafana/denorm.json is
// a dashboard of them (TestGrafanaDashboard checks that it names only
// these).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/pipeline/syncer"
)

// fanoutBuckets are the documents-per-change histogram's buckets: 0 (a
// change that reaches no document), then 1-2-5 steps up to a million.
var fanoutBuckets = []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000}

type syncMetrics struct {
	changes     *prometheus.CounterVec
	skipped     *prometheus.CounterVec
	written     *prometheus.CounterVec
	deleted     *prometheus.CounterVec
	passes      prometheus.Counter
	errors      prometheus.Counter
	lag         prometheus.GaugeFunc
	txLag       prometheus.Histogram
	fanout      *prometheus.HistogramVec
	lastSuccess prometheus.Gauge
	retained    prometheus.Gauge
	behind      prometheus.Gauge
	spent       *prometheus.CounterVec
	// collectors are what reg holds besides the process collector.
	collectors []prometheus.Collector
	reg        *prometheus.Registry
	srv        *http.Server

	mu sync.Mutex // guards what the lag gauge reads
	// applied is the lag of the last batch applied; pending, when set,
	// the commit time of the oldest change received and not yet applied.
	applied time.Duration
	pending time.Time
}

// lagNow is the lag as of now: the last batch's, or, while changes wait
// or are being applied, how long ago the oldest of them committed.
func (m *syncMetrics) lagNow() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.applied
	if !m.pending.IsZero() {
		l = max(l, time.Since(m.pending))
	}
	return l.Seconds()
}

// waiting records the commit time of the oldest change not applied yet
// (zero: none).
func (m *syncMetrics) waiting(since time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = since
}

// serveMetrics starts serving sync's metrics on addr until close.
func serveMetrics(ctx context.Context, addr, job, method string) (*syncMetrics, error) {
	m := newSyncMetrics(job, method)
	srv, err := serveRegistry(ctx, addr, m.reg)
	if err != nil {
		return nil, err
	}
	m.srv = srv
	return m, nil
}

// newSyncMetrics makes sync's metrics and their registry (not served).
func newSyncMetrics(job, method string) *syncMetrics {
	labels := prometheus.Labels{"job_name": job, "method": method}
	m := &syncMetrics{
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "denorm_sync_changes_applied_total",
			Help: "Source rows changed (inserted, updated, deleted) whose documents sync rebuilt, by table.", ConstLabels: labels}, []string{"table"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "denorm_sync_changes_skipped_total",
			Help: "Source row updates skipped as irrelevant: they changed no column the mapping reads, so no document was traced or rebuilt; by table.", ConstLabels: labels}, []string{"table"}),
		written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "denorm_sync_documents_written_total",
			Help: "Documents written (inserted or replaced), by collection.", ConstLabels: labels}, []string{"collection"}),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "denorm_sync_documents_deleted_total",
			Help: "Documents deleted, by collection.", ConstLabels: labels}, []string{"collection"}),
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "denorm_sync_passes_total",
			Help: "Passes (following: batches of changes) completed.", ConstLabels: labels}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "denorm_sync_errors_total",
			Help: "Failures: retried ones and the one that ended sync.", ConstLabels: labels}),
		txLag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "denorm_sync_transaction_lag_seconds",
			Help:        "Per source transaction applied: seconds from its commit on the source to the target's acknowledgement of its documents.",
			ConstLabels: labels, Buckets: prometheus.ExponentialBucketsRange(0.001, 6*3600, 48)}),
		fanout: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "denorm_sync_documents_per_change",
			Help:        "Fan-out (logical): per source row changed, the documents sync rebuilt for it, by table: in each batch, the distinct documents the table's changed rows were traced to (a collection rebuilt whole: all its documents), divided by those rows, observed once per row.",
			ConstLabels: labels, Buckets: fanoutBuckets}, []string{"table"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Name: "denorm_sync_last_success_timestamp_seconds",
			Help: "Unix time of the end of the last successful pass or batch.", ConstLabels: labels}),
		retained: prometheus.NewGauge(prometheus.GaugeOpts{Name: "denorm_sync_slot_retained_bytes",
			Help: "WAL the job's replication slot keeps on the source's disk (current position - restart_lsn), read every 30 s (logical).", ConstLabels: labels}),
		behind: prometheus.NewGauge(prometheus.GaugeOpts{Name: "denorm_sync_slot_behind_bytes",
			Help: "WAL the job has not confirmed to its replication slot (current position - confirmed_flush_lsn), read every 30 s (logical).", ConstLabels: labels}),
		spent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "denorm_sync_apply_seconds_total",
			Help: "Seconds spent applying batches of changes, by stage: snapshot (waiting for a source snapshot that sees the batch), trace (changed rows to document keys), build (reading and building documents), write (the target's acknowledgements) (logical).", ConstLabels: labels}, []string{"stage"}),
	}
	m.lag = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "denorm_sync_lag_seconds",
		Help: "How far the target is behind the source: while changes wait or are being applied, how long ago the oldest of them committed; otherwise how long after its commit the newest change applied was acknowledged (0 when caught up).", ConstLabels: labels}, m.lagNow)
	m.collectors = []prometheus.Collector{m.changes, m.skipped, m.written, m.deleted, m.passes, m.errors, m.lag, m.txLag, m.fanout, m.lastSuccess, m.retained, m.behind, m.spent}
	m.reg = newRegistry(m.collectors...)
	return m
}

// newRegistry is a registry of cs and the process collector.
func newRegistry(cs ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// serveRegistry serves reg's metrics at /metrics on addr (host:port)
// until the server returned is closed (closeServer). A failure to listen
// is the flag's error; a listener that fails later leaves the command
// running without metrics.
func serveRegistry(ctx context.Context, addr string, reg *prometheus.Registry) (*http.Server, error) {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener failed: the command goes on without metrics
		}
	}()
	return srv, nil
}

// closeServer stops a metrics server, giving scrapes in flight 2 s.
func closeServer(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

// pass records what a pass did.
func (m *syncMetrics) pass(p syncer.PassStats) {
	for t, c := range p.Tables {
		m.changes.WithLabelValues(t).Add(float64(c.Rows()))
		if c.Skipped > 0 {
			m.skipped.WithLabelValues(t).Add(float64(c.Skipped))
		}
	}
	for t, c := range p.Tables {
		if n := c.Rows(); n > 0 && p.Method == job.SyncLogical {
			h, v := m.fanout.WithLabelValues(t), c.PerChange()
			for range n {
				h.Observe(v)
			}
		}
	}
	for name, c := range p.Collections {
		m.written.WithLabelValues(name).Add(float64(c.Written))
		m.deleted.WithLabelValues(name).Add(float64(c.Deleted))
	}
	for stage, d := range map[string]time.Duration{"snapshot": p.Spent.Snapshot, "trace": p.Spent.Trace, "build": p.Spent.Build, "write": p.Spent.Write} {
		if d > 0 {
			m.spent.WithLabelValues(stage).Add(d.Seconds())
		}
	}
	for _, l := range p.TxLags {
		m.txLag.Observe(l.Seconds())
	}
	m.mu.Lock()
	m.applied, m.pending = p.Lag, time.Time{}
	m.mu.Unlock()
	m.passes.Inc()
	m.lastSuccess.Set(float64(p.End.UnixNano()) / 1e9)
}

// slot records the job's replication slot as the source shows it.
func (m *syncMetrics) slot(st *extract.SlotStatus) {
	m.behind.Set(float64(st.LagBytes))
	if st.Restart != 0 && st.Current >= st.Restart {
		m.retained.Set(float64(st.Current - st.Restart))
	}
}

// idle records a caught-up job that saved its position.
func (m *syncMetrics) idle() {
	m.mu.Lock()
	m.applied, m.pending = 0, time.Time{}
	m.mu.Unlock()
	m.lastSuccess.Set(float64(time.Now().UnixNano()) / 1e9)
}

func (m *syncMetrics) close() { closeServer(m.srv) }
