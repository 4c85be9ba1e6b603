package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// Interrupts: the first SIGINT or SIGTERM is acknowledged at once and
// cancels the command's context; migrate then gives the write in flight
// interruptGrace to be acknowledged, cancels it if it is not, saves the
// checkpoint of what was acknowledged and prints how to resume. A second
// signal quits at once, saving nothing more (the last checkpoint saved
// stays valid).

// interruptGrace is how long the write in flight may still take after an
// interrupt (pipeline.JobOptions.Grace).
const interruptGrace = 5 * time.Second

// interruptedError is the cause of a context cancelled by a signal.
type interruptedError struct{ sig os.Signal }

func (e interruptedError) Error() string { return fmt.Sprintf("interrupted (%v)", e.sig) }

// runSignals executes the command line, cancelling it on the first
// signal from sigs and calling exit on the second.
func runSignals(ctx context.Context, args []string, stdout, stderr io.Writer, sigs <-chan os.Signal, exit func(int)) int {
	g := &globals{stdout: stdout, stderr: newConsole(stderr), logFormat: logText}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go func() {
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-done:
			return
		}
		g.logger().Warn(fmt.Sprintf("%v received: stopping; the write in flight has %s to finish, then what was acknowledged is saved. Press Ctrl-C again to quit at once", sig, interruptGrace))
		cancel(interruptedError{sig})
		select {
		case sig = <-sigs:
			g.logger().Error(fmt.Sprintf("%v received again: quitting now; the last checkpoint saved is intact, resume from it", sig))
			exit(exitRuntime)
		case <-done:
		}
	}()
	return execute(ctx, g, args)
}
