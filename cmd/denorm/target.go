package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
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
	if n, err := strconv.Atoi(os.Getenv(deleteChunkEnv)); err == nil && n > 0 {
		opt.DeleteChunk = n
	}
	return load.Open(ctx, uri, opt)
}

// deleteChunkEnv names a debug hook: the most documents one delete
// command removes on FerretDB (load.Options.DeleteChunk), which the tests
// lower to delete in many chunks at a scale they can afford.
const deleteChunkEnv = "DENORM_DEBUG_DELETE_CHUNK"
