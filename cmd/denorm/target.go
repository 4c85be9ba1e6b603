package main

import (
	"context"
	"fmt"
	"time"

	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/load"
)

// connectRetry is how long verify tries to reach a server target by
// default (migrate: --retry-for; status tries once).
const connectRetry = 30 * time.Second

// openTarget opens the target; a server that does not answer is tried
// again for retryFor, and every failed attempt is told within seconds
// ("waiting for target ...: 10s, attempt 2 (connection refused)").
func openTarget(ctx context.Context, g *globals, uri string, opt load.Options, retryFor time.Duration) (load.Target, error) {
	start := time.Now()
	opt.Connect = load.RetryPolicy{For: retryFor, Base: 500 * time.Millisecond, Cap: 5 * time.Second,
		Log: func(attempt int, _ time.Duration, err error) {
			cs := connstr.Parse(uri)
			g.logger().Warn(fmt.Sprintf("waiting for target %s: %s, attempt %d (%s)", cs.Redacted(),
				time.Since(start).Round(time.Second), attempt, load.ConnectCause(cs.RedactError(err))))
		}}
	return load.Open(ctx, uri, opt)
}
