package main

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/pipeline/syncer"
)

// TestSyncLagMetricMoves: the lag gauge moves while a batch waits or is
// applied (how long ago its oldest change committed), not only when a
// batch ends; a batch applied sets it to that batch's lag, a caught-up
// job to 0; the transaction lag histogram covers hours.
func TestSyncLagMetricMoves(t *testing.T) {
	m, err := serveMetrics(context.Background(), "127.0.0.1:0", "j", "logical")
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	gauge := func() float64 {
		var d dto.Metric
		if err := m.lag.Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetGauge().GetValue()
	}
	m.waiting(time.Now().Add(-100 * time.Second))
	first := gauge()
	if first < 100 {
		t.Errorf("lag %.1f s while a change of 100 s ago waits", first)
	}
	time.Sleep(20 * time.Millisecond)
	if g := gauge(); g <= first {
		t.Errorf("the lag did not grow while the batch was in flight: %.3f then %.3f", first, g)
	}
	m.pass(syncer.PassStats{Lag: 2 * time.Second, End: time.Now()})
	if g := gauge(); g != 2 {
		t.Errorf("lag %.3f after a batch of lag 2 s", g)
	}
	m.idle()
	if g := gauge(); g != 0 {
		t.Errorf("lag %.3f once caught up", g)
	}
	var h dto.Metric
	m.txLag.Observe(3 * 3600)
	if err := m.txLag.(interface{ Write(*dto.Metric) error }).Write(&h); err != nil {
		t.Fatal(err)
	}
	b := h.GetHistogram().GetBucket()
	if top := b[len(b)-1].GetUpperBound(); top < 6*3600 {
		t.Errorf("the histogram's buckets stop at %.0f s", top)
	}
	if c := b[len(b)-1].GetCumulativeCount(); c != 1 {
		t.Errorf("a 3-hour lag is not in a finite bucket (count %d in the last one)", c)
	}
}

// TestSyncFanoutMetric: the documents-per-change histogram observes, per
// table, each changed row of a logical batch once, at the batch's
// documents rebuilt for the table divided by its rows; a table whose
// changes reached no document is in the 0 bucket; diff passes, which see
// no rows, observe nothing.
func TestSyncFanoutMetric(t *testing.T) {
	m, err := serveMetrics(context.Background(), "127.0.0.1:0", "j", "logical")
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	m.pass(syncer.PassStats{Method: job.SyncLogical, End: time.Now(), Tables: map[string]*syncer.TableChanges{
		"public.country": {Updates: 2, Documents: 1100},
		"public.city":    {Inserts: 1, Deletes: 2, Documents: 0},
		"public.skipped": {Skipped: 5},
	}})
	m.pass(syncer.PassStats{Method: job.SyncLogical, End: time.Now(), Tables: map[string]*syncer.TableChanges{"public.country": {Updates: 1, Documents: 3}}})
	m.pass(syncer.PassStats{Method: job.SyncDiff, End: time.Now(), Tables: map[string]*syncer.TableChanges{"public.country": {Updates: 1, Documents: 7}}})
	read := func(table string) *dto.Histogram {
		var d dto.Metric
		if err := m.fanout.WithLabelValues(table).(prometheus.Histogram).Write(&d); err != nil {
			t.Fatal(err)
		}
		return d.GetHistogram()
	}
	if h := read("public.country"); h.GetSampleCount() != 3 || h.GetSampleSum() != 1103 {
		t.Errorf("country: %d observations summing to %.0f; want 3 (two rows at 550, one at 3) summing to 1103", h.GetSampleCount(), h.GetSampleSum())
	} else {
		for _, b := range h.GetBucket() {
			want := map[float64]uint64{0: 0, 2: 0, 5: 1, 500: 1, 1000: 3}
			if n, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != n {
				t.Errorf("country: bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), n)
			}
		}
	}
	if h := read("public.city"); h.GetSampleCount() != 3 || h.GetSampleSum() != 0 || h.GetBucket()[0].GetCumulativeCount() != 3 {
		t.Errorf("city: %d observations summing to %.0f, %d at 0; want 3 at 0", h.GetSampleCount(), h.GetSampleSum(), h.GetBucket()[0].GetCumulativeCount())
	}
	if h := read("public.skipped"); h.GetSampleCount() != 0 {
		t.Errorf("skipped updates observed %d times", h.GetSampleCount())
	}
}
