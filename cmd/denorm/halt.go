package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
)

// haltEnv aims the sync fault tests' kills: DENORM_TEST_HALT=STEP:N makes
// sync kill itself with SIGKILL (nothing deferred runs, nothing flushed,
// as kill -9 from outside) the Nth time it reaches STEP, one of the steps
// -v logs: the crash points of syncer.Steps ("documents written",
// "checkpoint saved", ...). A kill aimed
// this way lands at the same point on a loaded machine and a quiet one,
// which a kill after a delay does not. Not for users: it is not in the
// help.
const haltEnv = "DENORM_TEST_HALT"

// halter counts the steps sync reaches and kills the process at the one
// haltEnv names.
type halter struct {
	step string
	at   int
	mu   sync.Mutex
	seen int
	w    io.Writer
}

// newHalter reads haltEnv; nil when unset.
func newHalter(w io.Writer) (*halter, error) {
	v := os.Getenv(haltEnv)
	if v == "" {
		return nil, nil
	}
	i := strings.LastIndexByte(v, ':')
	n, err := strconv.Atoi(v[i+1:])
	if i <= 0 || err != nil || n < 1 {
		return nil, fmt.Errorf("%s=%q: want STEP:N, N a positive count", haltEnv, v)
	}
	return &halter{step: v[:i], at: n, w: w}, nil
}

// reached counts a step and kills the process at the aimed one.
func (h *halter) reached(step string) {
	if h == nil || step != h.step {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen++; h.seen < h.at {
		return
	}
	fmt.Fprintf(h.w, "%s: halting at %q #%d\n", haltEnv, step, h.seen)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	select {} // the signal is on its way
}
