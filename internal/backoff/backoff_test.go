package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Policy
		attempt int
		want    time.Duration
	}{
		{"first retry waits Base", Policy{Base: 200 * time.Millisecond, Cap: 3 * time.Second}, 1, 200 * time.Millisecond},
		{"doubles", Policy{Base: 200 * time.Millisecond, Cap: 3 * time.Second}, 4, 1600 * time.Millisecond},
		{"capped", Policy{Base: 200 * time.Millisecond, Cap: 3 * time.Second}, 5, 3 * time.Second},
		{"stays capped far out", Policy{Base: 200 * time.Millisecond, Cap: 3 * time.Second}, 1000, 3 * time.Second},
		{"cap below base means base", Policy{Base: time.Second, Cap: time.Millisecond}, 3, time.Second},
		{"attempt 0 is the first", Policy{Base: time.Second, Cap: time.Minute}, 0, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Delay(tc.attempt); got != tc.want {
				t.Errorf("Delay(%d) = %s, want %s", tc.attempt, got, tc.want)
			}
		})
	}
}

func TestWait(t *testing.T) {
	if err := Wait(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	// A context that ends cuts an hour's wait short, with its cause.
	cause := errors.New("signal")
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel(cause) }()
	start := time.Now()
	if err := Wait(ctx, time.Hour); !errors.Is(err, cause) {
		t.Fatalf("Wait = %v, want the context's cause", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("Wait took %s after the context ended", time.Since(start))
	}
	// An ended context does not wait at all.
	if err := Wait(ctx, time.Hour); !errors.Is(err, cause) {
		t.Fatalf("Wait on an ended context = %v", err)
	}
}
