// Package backoff is the one retry backoff of denorm: capped exponential
// waits that end as soon as the context ends. It knows nothing of drivers:
// callers decide what is worth retrying (load.Transient for the target,
// the runner's own test for a lost source connection).
package backoff

import (
	"context"
	"time"
)

// Policy is a capped exponential backoff: the wait before retry n (from 1)
// is Base·2^(n-1), at most Cap (a Cap below Base means Base).
type Policy struct {
	Base, Cap time.Duration
}

// Delay is the wait before retry attempt (1 for the first retry).
func (p Policy) Delay(attempt int) time.Duration {
	limit := max(p.Cap, p.Base)
	d := p.Base
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// Wait waits d, or less when ctx ends first: then it returns ctx's error
// (context.Canceled or DeadlineExceeded, or the cause given to the
// context's cancel function).
func Wait(ctx context.Context, d time.Duration) error {
	if err := context.Cause(ctx); err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
