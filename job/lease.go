package job

// Job leases: one writer per job. HoldLease takes the job's lease from
// the target's record store (see load.Lease) and keeps it alive with a
// heartbeat until Release. A job that loses it (its heartbeat failed for
// the lease's whole time to live, and another run took it over) stops:
// the lease's Context ends, and the store Guard returns refuses to save
// or delete its record. migrate and sync hold one through Prepare.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/denorm/denorm/load"
)

// LeaseOptions tune HoldLease.
type LeaseOptions struct {
	// TTL is how long the lease lives without a heartbeat on a server
	// target (0: load.DefaultLeaseTTL): the longest a crashed run keeps
	// the next one waiting. Heartbeats come every TTL/4.
	TTL time.Duration
	// Command names what holds the lease, for messages and status
	// ("migrate", "sync").
	Command string
	// Notice, when set, is told of heartbeats that failed and will be
	// retried.
	Notice func(msg string)
}

// Lease is a job's lease held by this process.
type Lease struct {
	renewMu sync.Mutex // guards lease: the heartbeat, Check and Release use it
	lease   load.Lease
	id      string
	holder  load.LeaseHolder
	where   string
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stop    chan struct{}
	done    chan struct{}
	// validUntil is the lease's ValidUntil after the last heartbeat, in
	// Unix nanoseconds (0: it cannot expire).
	validUntil atomic.Int64

	mu  sync.Mutex // guards err
	err error
}

// HoldLease takes the lease of job id (a record id, RecordID)
// from store and starts its heartbeat. A lease another process holds is
// a *load.LeaseHeldError naming it. The lease's Context is ctx, ended
// with a *load.LeaseLostError as its cause when the lease is lost; run
// the job under it, and Release the lease when the job ends.
func HoldLease(ctx context.Context, store load.RecordStore, id string, opt LeaseOptions) (*Lease, error) {
	if opt.TTL <= 0 {
		opt.TTL = load.DefaultLeaseTTL
	}
	l, err := store.AcquireLease(ctx, id, load.NewLeaseHolder(opt.Command), opt.TTL)
	if err != nil {
		return nil, err
	}
	h := &Lease{lease: l, id: id, holder: l.Holder(), where: store.Where(), stop: make(chan struct{}), done: make(chan struct{})}
	h.setValidUntil()
	h.ctx, h.cancel = context.WithCancelCause(ctx)
	go h.heartbeat(opt.TTL/4, opt.Notice)
	return h, nil
}

// heartbeat renews the lease every interval until Release or loss.
func (h *Lease) heartbeat(interval time.Duration, notice func(string)) {
	defer close(h.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		err := h.renew(ctx)
		cancel()
		var lost *load.LeaseLostError
		switch {
		case errors.As(err, &lost):
			return
		case err != nil && notice != nil:
			notice(fmt.Sprintf("job %s: lease heartbeat failed (%v); retrying", h.id, err))
		}
	}
}

// renew renews the lease; a lost lease ends the lease's Context.
func (h *Lease) renew(ctx context.Context) error {
	h.renewMu.Lock()
	defer h.renewMu.Unlock()
	if err := h.Err(); err != nil {
		return err
	}
	err := h.lease.Renew(ctx)
	var lost *load.LeaseLostError
	switch {
	case errors.As(err, &lost):
		h.lose(lost)
	case err == nil:
		h.setValidUntil()
	}
	return err
}

func (h *Lease) setValidUntil() {
	var n int64
	if t := h.lease.ValidUntil(); !t.IsZero() {
		n = t.UnixNano()
	}
	h.validUntil.Store(n)
}

func (h *Lease) lose(err *load.LeaseLostError) {
	h.mu.Lock()
	if h.err == nil {
		h.err = err
	}
	h.mu.Unlock()
	h.cancel(err)
}

// Context is the context the job runs under: the one HoldLease was
// given, also ended when the lease is lost (context.Cause is then the
// *load.LeaseLostError).
func (h *Lease) Context() context.Context { return h.ctx }

// Holder is this process as the lease records it.
func (h *Lease) Holder() load.LeaseHolder { return h.holder }

// Err returns the *load.LeaseLostError once the lease is lost, else nil.
func (h *Lease) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// Check returns nil when the job may go on writing: the lease is this
// process's. Past the lease's validity (no heartbeat got through for its
// time to live) it renews the lease first, taking it again when no other
// run took it over; an error that renewal returns, other than the
// *load.LeaseLostError, is the server's (retry later).
func (h *Lease) Check(ctx context.Context) error {
	if err := h.Err(); err != nil {
		return err
	}
	if n := h.validUntil.Load(); n == 0 || time.Now().UnixNano() <= n {
		return nil
	}
	return h.renew(ctx)
}

// Release stops the heartbeat and gives the lease up. It is safe to call
// more than once.
func (h *Lease) Release(ctx context.Context) error {
	select {
	case <-h.stop:
		return nil
	default:
	}
	close(h.stop)
	<-h.done
	h.cancel(context.Canceled)
	h.renewMu.Lock()
	defer h.renewMu.Unlock()
	return h.lease.Release(ctx)
}

// Guard returns store with Save and Delete checked first (Check): a run
// that lost its job never overwrites the checkpoint of the run that took
// the job over.
func (h *Lease) Guard(store load.RecordStore) load.RecordStore {
	return &guardedStore{RecordStore: store, lease: h}
}

type guardedStore struct {
	load.RecordStore
	lease *Lease
}

func (g *guardedStore) Save(ctx context.Context, c *load.Record) error {
	if err := g.lease.Check(ctx); err != nil {
		return err
	}
	return g.RecordStore.Save(ctx, c)
}

func (g *guardedStore) Delete(ctx context.Context, id string) error {
	if err := g.lease.Check(ctx); err != nil {
		return err
	}
	return g.RecordStore.Delete(ctx, id)
}
