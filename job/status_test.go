package job

import (
	"testing"
	"time"

	"github.com/denorm/denorm/load"
)

// TestStatusOfFollowingJob: a sync job whose initial copy is done is
// running while a process holds its lease (not "done"), and shows no
// rate or time left (they were the copy's); without a holder it is done
// as before.
func TestStatusOfFollowingJob(t *testing.T) {
	now := time.Now()
	rec := &Record{ID: "j", Job: "j", Partitions: 1, Workers: 1, Phase: PhaseDone,
		RunStarted: now.Add(-time.Hour), Updated: now.Add(-time.Minute), RunRows: 0,
		Streams: []Stream{{Entry: 0, Collection: "c", Done: true, Rows: 1000, Written: 1000}},
		Sync:    &Sync{Method: SyncLogical, Slot: "s", Position: 42}}
	live := load.LeaseState{ID: "j", Live: true, Holder: load.LeaseHolder{Command: "sync", PID: 7, Heartbeat: now}}
	js := jobStatus(rec, live, true, now)
	if js.State != StateRunning || js.Rate != 0 || js.ETA != nil {
		t.Errorf("following job: state %s, rate %.1f, eta %v; want running, no rate, no ETA", js.State, js.Rate, js.ETA)
	}
	if js := jobStatus(rec, load.LeaseState{}, false, now); js.State != StateDone {
		t.Errorf("a sync job between runs: state %s, want done", js.State)
	}
	migrated := *rec
	migrated.Sync = nil
	if js := jobStatus(&migrated, live, true, now); js.State != StateDone {
		t.Errorf("a finished migration: state %s, want done", js.State)
	}
}
