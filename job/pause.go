package job

// Pauses: how another process writes a running job's documents without
// racing it (verify --repair against a sync --follow). The job's lease
// stays with the job; the other process asks it to stand still with a
// second lease, and the job says it does with a third:
//
//   - the asker takes PauseRequestID(job) (RequestPause) and waits until
//     PausedID(job) is live;
//   - the job, between two batches (HonourPause), sees the request, takes
//     PausedID(job), writes nothing until the request is gone (released,
//     or expired with a crashed asker), then releases PausedID(job) and
//     looks again before its next write.
//
// Why no write of the job overlaps one of the asker: the job writes only
// after a look that found no request, made after it released PausedID.
// While the asker holds the request, every such look finds it, so the
// job's writes all came before the look that found the request, and that
// look came before the PausedID the asker sees live: any PausedID taken
// earlier was released before the request was taken.
//
// Every document the job writes after the pause it builds from a source
// snapshot taken after the pause: what the asker wrote from an older
// snapshot is overwritten only by something newer, and a change the
// asker's snapshot missed is applied by the job later, as every change.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/denorm/denorm/load"
)

const (
	pauseRequest = ".pause-request"
	pausedSuffix = ".paused"
)

// PauseRequestID is the lease id of a request that job pause.
func PauseRequestID(job string) string { return job + pauseRequest }

// PausedID is the lease id a paused job holds.
func PausedID(job string) string { return job + pausedSuffix }

// pauseLease reports whether id is a pause request's or a paused job's
// lease, not a job's.
func pauseLease(id string) bool {
	return strings.HasSuffix(id, pauseRequest) || strings.HasSuffix(id, pausedSuffix)
}

// leaseLive reports whether store holds a live lease of id.
func leaseLive(ctx context.Context, store load.RecordStore, id string) (bool, load.LeaseHolder, error) {
	leases, err := store.Leases(ctx)
	if err != nil {
		return false, load.LeaseHolder{}, err
	}
	for _, l := range leases {
		if l.ID == id && l.Live {
			return true, l.Holder, nil
		}
	}
	return false, load.LeaseHolder{}, nil
}

// Running reports whether job id's lease is held by a live process, and
// by whom.
func Running(ctx context.Context, store load.RecordStore, id string) (bool, load.LeaseHolder, error) {
	return leaseLive(ctx, store, id)
}

// PauseTimeoutError is a job that did not pause within the time asked.
type PauseTimeoutError struct {
	Job    string
	Holder load.LeaseHolder
	Wait   time.Duration
}

func (e *PauseTimeoutError) Error() string {
	return fmt.Sprintf("job %q is being run by another process (%s) that did not pause within %s; a job pauses between two batches of a logical sync (sync --follow, --every, --once)", e.Job, e.Holder, e.Wait)
}

// RequestPause asks the running job id to pause (see the file's comment)
// and returns once it has: the lease returned is the request, and the job
// goes on once it is released. Past wait without the job pausing, it is a
// *PauseTimeoutError.
func RequestPause(ctx context.Context, store load.RecordStore, id string, wait time.Duration, command string) (*Lease, error) {
	req, err := HoldLease(ctx, store, PauseRequestID(id), LeaseOptions{Command: command})
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		paused, _, err := leaseLive(ctx, store, PausedID(id))
		if err == nil && paused {
			return req, nil
		}
		if err == nil && time.Now().After(deadline) {
			_, holder, _ := leaseLive(ctx, store, id)
			err = &PauseTimeoutError{Job: id, Holder: holder, Wait: wait}
		}
		if err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(100 * time.Millisecond):
				continue
			}
		}
		_ = req.Release(context.WithoutCancel(ctx))
		return nil, err
	}
}

// pauseCheckEvery is how often a running job looks for a pause request.
const pauseCheckEvery = 250 * time.Millisecond

// HonourPause is called by a running job before it writes: when a
// process asked it to pause (RequestPause), it says so (notice, when
// set), holds PausedID and returns only once the request is gone. It
// looks at most every pauseCheckEvery (the asker waits for the next
// look), except after a pause, when it looks again before returning.
func (j *Job) HonourPause(ctx context.Context, notice func(string)) error {
	if j.Lease == nil || time.Since(j.pauseLooked) < pauseCheckEvery {
		return nil
	}
	for {
		asked, by, err := leaseLive(ctx, j.store, PauseRequestID(j.ID))
		if err != nil {
			return err // looked again at the next call: a retry reads it
		}
		j.pauseLooked = time.Now()
		if !asked {
			return nil
		}
		if notice != nil {
			notice(fmt.Sprintf("job %s: paused, as %s asked", j.ID, by))
		}
		paused, err := HoldLease(ctx, j.store, PausedID(j.ID), LeaseOptions{Command: "sync (paused)"})
		if err != nil {
			return fmt.Errorf("pause job %s: %w", j.ID, err)
		}
		start := time.Now()
		for asked && err == nil {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(50 * time.Millisecond):
				asked, _, err = leaseLive(ctx, j.store, PauseRequestID(j.ID))
			}
			if err == nil {
				err = j.Lease.Err()
			}
		}
		// Released before the next look: see the file's comment.
		if rerr := paused.Release(context.WithoutCancel(ctx)); err == nil && rerr != nil {
			err = fmt.Errorf("end the pause of job %s: %w", j.ID, rerr)
		}
		if err != nil {
			return err
		}
		if notice != nil {
			notice(fmt.Sprintf("job %s: going on after a pause of %s", j.ID, time.Since(start).Round(time.Millisecond)))
		}
	}
}
