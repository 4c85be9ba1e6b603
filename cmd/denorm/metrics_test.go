package main

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

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
