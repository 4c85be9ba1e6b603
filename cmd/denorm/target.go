package main

import (
	"context"
	"fmt"
	"time"

	"github.com/denorm/denorm/load"
)

// connectRetry is how long status and verify try to reach a server
// target (migrate: --retry-for).
const connectRetry = 30 * time.Second

// openTarget opens the target; a server that does not answer is tried
// again for retryFor, and every failed attempt is told within seconds
// ("waiting for target ...: 10s, attempt 2 (connection refused)").
func openTarget(ctx context.Context, g *globals, uri string, opt load.Options, retryFor time.Duration) (load.Target, error) {
	start := time.Now()
	opt.Connect = load.RetryPolicy{For: retryFor, Base: 500 * time.Millisecond, Cap: 5 * time.Second,
		Log: func(attempt int, _ time.Duration, err error) {
			g.logger().Warn(fmt.Sprintf("waiting for target %s: %s, attempt %d (%s)", load.RedactURI(uri),
				time.Since(start).Round(time.Second), attempt, load.ConnectCause(load.Redact(err, uri))))
		}}
	return load.Open(ctx, uri, opt)
}
