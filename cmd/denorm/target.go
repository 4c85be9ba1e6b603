package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/load"
)

// --retry-for has one default and one meaning in every command that takes
// it (migrate, sync, verify): the budget for retrying transient faults of
// the source and the target once work began. A target that never answered
// is not retried: the first contact is one attempt of a few seconds
// (load.ConnectError, FirstContact), so a wrong address or a target that
// is down fails the command at once, as an unreachable source does.
const (
	defaultRetryFor = 5 * time.Minute
	retryForUsage   = "once the target has answered, keep retrying transient source and target failures this long (a target that never answers fails at once)"
)

// addRetryForFlag adds --retry-for to cmd, in the same words everywhere.
func addRetryForFlag(cmd *cobra.Command, v *time.Duration) {
	cmd.Flags().DurationVar(v, "retry-for", defaultRetryFor, retryForUsage)
}

// targetUsage is --target's help in the commands whose default target is
// migrate's: ./denorm-out.
const targetUsage = "target: mongodb://host:port/db or a directory (env DENORM_TARGET); without one, ./" + defaultTarget + " (migrate's default) when it exists, else an error"

// defaultTargetRead tells, for the commands that read a target (status,
// verify), whether the target is the default one (no --target, no
// DENORM_TARGET), and says so on stderr: a newcomer sees which target was
// read. It is a usage error when that directory is not there: reading
// nothing there would report "no jobs", or every document missing, about
// a target never meant.
func defaultTargetRead(cmd *cobra.Command, g *globals) (bool, error) {
	if cmd.Flags().Changed("target") || os.Getenv("DENORM_TARGET") != "" {
		return false, nil
	}
	if st, err := os.Stat(defaultTarget); err != nil || !st.IsDir() {
		return true, usageError{fmt.Errorf("no --target given, and there is no ./%s (migrate's default target) here: give --target mongodb://host:port/db or the directory migrate wrote to (or set DENORM_TARGET)", defaultTarget)}
	}
	g.logger().Info(fmt.Sprintf("no --target given: reading ./%s, migrate's default target", defaultTarget))
	return true, nil
}

// openTarget opens the target. A server that never answered fails at
// once (one short attempt); once it has answered, a reconnection
// (Target.Reopen) is retried for retryFor, every failed attempt told
// within seconds ("waiting for target ...: 10s, attempt 2 (connection
// refused)").
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
