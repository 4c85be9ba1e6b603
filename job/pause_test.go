package job

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPause: a running job that calls HonourPause between its writes
// stands still from the moment RequestPause returns until the request is
// released, says so, and goes on after it; a job that never looks makes
// RequestPause fail past its wait, releasing the request. status lists
// neither lease as a job.
func TestPause(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	spec := Spec{Name: "j", Partitions: 1, Workers: 1, Mapping: mappingFile(t), Version: "1.0"}
	j, err := Prepare(ctx, openDir(t, dir), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Lease.Release(ctx)
	asker := openDir(t, dir).Records()

	// Nobody looks: the request times out and is released.
	_, err = RequestPause(ctx, asker, "j", 300*time.Millisecond, "verify --repair")
	var te *PauseTimeoutError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "did not pause within 300ms") {
		t.Fatalf("RequestPause of a job that never looks = %v", err)
	}
	if live, _, err := leaseLive(ctx, asker, PauseRequestID("j")); err != nil || live {
		t.Fatalf("the timed-out request is still held (%v)", err)
	}

	// The job writes in a loop, looking before each write.
	var writing, writes atomic.Int64
	var notices atomic.Value
	notices.Store("")
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := j.HonourPause(ctx, func(msg string) { notices.Store(notices.Load().(string) + msg + "\n") }); err != nil {
				done <- err
				return
			}
			writing.Store(1)
			time.Sleep(5 * time.Millisecond)
			writes.Add(1)
			writing.Store(0)
		}
	}()
	for writes.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	req, err := RequestPause(ctx, asker, "j", 5*time.Second, "verify --repair")
	if err != nil {
		t.Fatal(err)
	}
	before := writes.Load()
	for range 40 {
		if writing.Load() != 0 {
			t.Fatal("the job writes while paused")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if writes.Load() != before {
		t.Fatalf("the job wrote %d times while paused", writes.Load()-before)
	}
	if sts, _, err := Status(ctx, asker, time.Now()); err != nil || len(sts) != 1 || sts[0].ID != "j" {
		t.Errorf("status during a pause: %+v (%v), want job j alone", sts, err)
	}
	if err := req.Release(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for writes.Load() < before+3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if writes.Load() < before+3 {
		t.Fatal("the job did not go on after the pause")
	}
	msg := notices.Load().(string)
	if !strings.Contains(msg, "job j: paused, as verify --repair") || !strings.Contains(msg, "job j: going on after a pause of") {
		t.Errorf("notices: %q", msg)
	}
}
