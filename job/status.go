package job

// Status: what the jobs recorded in a target are doing, from their
// checkpoints and leases. A job whose checkpoint says "running" is only
// running while a process holds its lease: otherwise it stopped (crashed,
// killed, interrupted) and waits to be resumed.

import (
	"context"
	"sort"
	"time"

	"github.com/denorm/denorm/load"
)

// Job states, as status shows them.
const (
	// StateRunning: a process holds the job's lease.
	StateRunning = "running"
	// StateStopped: the job is unfinished and no process holds its lease.
	StateStopped = "stopped"
	// StateDone: the job finished.
	StateDone = "done"
	// StateStarting: a process holds the lease of a job that has no
	// checkpoint yet.
	StateStarting = "starting"
)

// JobStatus is one job (or partition of a job) of a target.
type JobStatus struct {
	// ID is the checkpoint id; Job, Partition and Partitions name it.
	ID, Job               string
	Partition, Partitions int
	// State is StateRunning, StateStopped, StateDone or StateStarting.
	State string
	// Holder is the process holding the job's lease (nil: none live),
	// Last the process that held it last when none does now (nil:
	// unknown).
	Holder, Last *load.LeaseHolder
	// Record is the job's record (nil when StateStarting).
	Record *Record
	// Rows, Written and Failed sum the job's streams; Estimated is the
	// rows the job reads in all as far as known (the catalog's estimate
	// for unfinished streams, the count for finished ones), 0 when not
	// known.
	Rows, Written, Failed, Estimated int64
	// Percent is Rows of Estimated (below 100 until the job is done);
	// nil when not known.
	Percent *float64
	// Rate is this run's rows per second (0: not known); ETA the time
	// left at that rate, for a running job with an estimate (nil
	// otherwise).
	Rate float64
	ETA  *time.Duration
	// Collections are the job's collections in plan order.
	Collections []CollectionStatus
}

// CollectionStatus is one collection of a job.
type CollectionStatus struct {
	Name string
	// State is "done", "running" (the job is at it) or "pending".
	State                            string
	Rows, Written, Failed, Estimated int64
}

// Status returns the jobs of store, by id, and the checkpoints that
// cannot be read (CorruptError) beside them.
func Status(ctx context.Context, store load.RecordStore, now time.Time) ([]JobStatus, []error, error) {
	cps, bad, err := List(ctx, store)
	if err != nil {
		return nil, nil, err
	}
	leases, err := store.Leases(ctx)
	if err != nil {
		return nil, nil, err
	}
	byID := map[string]load.LeaseState{}
	for _, l := range leases {
		byID[l.ID] = l
	}
	var out []JobStatus
	seen := map[string]bool{}
	for _, c := range cps {
		seen[c.ID] = true
		l, hasLease := byID[c.ID]
		out = append(out, jobStatus(c, l, hasLease, now))
	}
	for _, l := range leases {
		if seen[l.ID] || !l.Live || pauseLease(l.ID) {
			continue
		}
		h := l.Holder
		out = append(out, JobStatus{ID: l.ID, Job: l.ID, Partitions: 1, State: StateStarting, Holder: &h})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, bad, nil
}

func jobStatus(c *Record, l load.LeaseState, hasLease bool, now time.Time) JobStatus {
	js := JobStatus{ID: c.ID, Job: c.Job, Partition: c.Partition, Partitions: c.Partitions, Record: c}
	if hasLease {
		h := l.Holder
		if l.Live {
			js.Holder = &h
		} else {
			js.Last = &h
		}
	}
	// A sync job's copy done, a process holding its lease follows or
	// passes: it runs.
	following := c.Sync != nil && c.Phase == PhaseDone
	switch {
	case following && js.Holder != nil:
		js.State = StateRunning
	case c.Phase == PhaseDone:
		js.State = StateDone
	case js.Holder != nil:
		js.State = StateRunning
	default:
		js.State = StateStopped
	}
	index := map[string]int{}
	known := true
	for _, s := range c.Streams {
		i, ok := index[s.Collection]
		if !ok {
			i = len(js.Collections)
			index[s.Collection] = i
			js.Collections = append(js.Collections, CollectionStatus{Name: s.Collection, State: "done"})
		}
		cs := &js.Collections[i]
		est := s.Rows
		if !s.Done {
			if s.Estimate == 0 {
				known = false
			}
			est = max(s.Estimate, s.Rows)
			cs.State = "pending"
			if s.Rows > 0 || s.Collection == c.Collection {
				cs.State = "running"
			}
		}
		cs.Rows, cs.Written, cs.Failed, cs.Estimated = cs.Rows+s.Rows, cs.Written+s.Written, cs.Failed+s.Failed, cs.Estimated+est
		js.Rows, js.Written, js.Failed, js.Estimated = js.Rows+s.Rows, js.Written+s.Written, js.Failed+s.Failed, js.Estimated+est
	}
	if !known && js.State != StateDone {
		js.Estimated = 0
	}
	if following {
		// The rows, rate and ETA are the initial copy's, which is over:
		// a sync job's progress is its position and lag (Record.Sync).
		p := 100.0
		js.Percent = &p
		return js
	}
	switch {
	case js.State == StateDone:
		p := 100.0
		js.Percent = &p
	case js.Estimated > 0:
		p := min(99.9, 100*float64(js.Rows)/float64(js.Estimated))
		js.Percent = &p
	}
	if el := c.Updated.Sub(c.RunStarted); !c.RunStarted.IsZero() && el > 0 && js.Rows > c.RunRows {
		js.Rate = float64(js.Rows-c.RunRows) / el.Seconds()
	}
	if js.State == StateRunning && js.Rate > 0 && js.Estimated > js.Rows {
		left := time.Duration(float64(js.Estimated-js.Rows)/js.Rate*float64(time.Second)) - now.Sub(c.Updated)
		eta := max(0, left).Round(time.Second)
		js.ETA = &eta
	}
	return js
}
