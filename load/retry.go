package load

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/backoff"
	"github.com/denorm/denorm/transform"
)

// RetryPolicy bounds the retries of transient target failures: waits grow
// from Base, doubling, up to Cap, for at most For in all.
type RetryPolicy struct {
	For, Base, Cap time.Duration
	// Log, when set, is told of each retry before its wait.
	Log func(attempt int, wait time.Duration, err error)
}

// DefaultRetry retries for up to five minutes, waiting 200 ms to 10 s.
var DefaultRetry = RetryPolicy{For: 5 * time.Minute, Base: 200 * time.Millisecond, Cap: 10 * time.Second}

var retryAfterRe = regexp.MustCompile(`RetryAfterMs=(\d+)`)

// Transient reports whether a target error is worth retrying: what the
// driver calls retryable (network errors, timeouts, the RetryableWriteError
// label) and throttling (Cosmos DB's 16500 "request rate is large", whose
// RetryAfterMs hint is returned as after).
func Transient(err error) (retry bool, after time.Duration) {
	if err == nil || errors.Is(err, context.Canceled) {
		return false, 0
	}
	msg := err.Error()
	if m := retryAfterRe.FindStringSubmatch(msg); m != nil {
		if ms, perr := strconv.Atoi(m[1]); perr == nil {
			after = time.Duration(ms) * time.Millisecond
		}
	}
	if throttled(err) {
		return true, after
	}
	var le mongo.LabeledError
	if errors.As(err, &le) && (le.HasErrorLabel("RetryableWriteError") || le.HasErrorLabel("NetworkError")) {
		return true, after
	}
	if mongo.IsNetworkError(err) || mongo.IsTimeout(err) {
		return true, after
	}
	if strings.Contains(msg, "server selection error") || strings.Contains(msg, "connection refused") {
		return true, after
	}
	return false, 0
}

func throttled(err error) bool {
	var se mongo.ServerError
	if errors.As(err, &se) && se.HasErrorCode(16500) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "(code 16500)") || strings.Contains(msg, "request rate is large")
}

// Retry calls fn until it succeeds, fails with a non-transient error, or
// the policy's time is spent. Waits (internal/backoff) end early when ctx
// is done.
func Retry(ctx context.Context, p RetryPolicy, fn func() error) error {
	start := time.Now()
	bo := backoff.Policy{Base: p.Base, Cap: p.Cap}
	for attempt := 1; ; attempt++ {
		err := fn()
		retry, after := Transient(err)
		if !retry {
			return err
		}
		w := max(bo.Delay(attempt), after)
		if p.Cap > 0 && w > p.Cap && after <= p.Cap {
			w = p.Cap
		}
		if time.Since(start)+w > p.For {
			tries := fmt.Sprintf("%d attempts", attempt)
			if attempt == 1 {
				tries = "1 attempt"
			}
			return fmt.Errorf("gave up after %s in %s: %w", tries, time.Since(start).Round(time.Millisecond), err)
		}
		if p.Log != nil {
			p.Log(attempt, w, err)
		}
		if backoff.Wait(ctx, w) != nil {
			return fmt.Errorf("%w (interrupted while retrying: %v)", err, ctx.Err())
		}
	}
}

// Writer is the write half of a Target: what RetryWriter wraps.
type Writer interface {
	Write(ctx context.Context, collection string, docs []transform.Document) ([]transform.Reject, error)
}

// rewriter is a target with a cheaper write for documents most of which
// exist already (serverTarget.Rewrite).
type rewriter interface {
	Rewrite(ctx context.Context, collection string, docs []transform.Document) ([]transform.Reject, error)
}

// Rewriting is t as a Writer of documents most of which exist already:
// sync's rebuilt documents. A server target then writes them again
// without first trying to insert them (serverTarget.Rewrite); other
// targets write as Write does. Either way a document whose _id is new is
// inserted.
func Rewriting(t Target) Writer {
	if r, ok := t.(rewriter); ok {
		return rewriteWriter{r}
	}
	return t
}

type rewriteWriter struct{ r rewriter }

func (w rewriteWriter) Write(ctx context.Context, collection string, docs []transform.Document) ([]transform.Reject, error) {
	return w.r.Rewrite(ctx, collection, docs)
}

// RetryWriter retries a target's transient write failures (the whole
// batch: writes are idempotent) and batches with throttled documents.
type RetryWriter struct {
	Writer
	Policy RetryPolicy
	// Stop ends waits early (an interrupt); nil never.
	Stop context.Context
}

// Write writes docs, retrying transient failures.
func (s *RetryWriter) Write(ctx context.Context, collection string, docs []transform.Document) ([]transform.Reject, error) {
	stop := s.Stop
	if stop == nil {
		stop = context.Background()
	}
	var rejects []transform.Reject
	// The policy's time bounds every kind of wait, a write that hangs
	// included: no attempt outlives it.
	deadline := time.Now().Add(s.Policy.For)
	err := Retry(stop, s.Policy, func() error {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if s.Policy.For > 0 {
			actx, cancel = context.WithDeadline(ctx, deadline)
		}
		defer cancel()
		var err error
		rejects, err = s.Writer.Write(actx, collection, docs)
		if err == nil {
			for _, r := range rejects {
				if throttled(r.Err) {
					return fmt.Errorf("target throttled document %v: %w", r.ID, r.Err)
				}
			}
		}
		return err
	})
	return rejects, err
}
