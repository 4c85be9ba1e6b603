package main

import (
	"io"
	"testing"
)

// TestHalterEnv: DENORM_TEST_HALT is STEP:N (the step may hold colons);
// anything else is refused, and unset means no halter. The kill itself is
// TestSyncCrashResume's.
func TestHalterEnv(t *testing.T) {
	t.Setenv(haltEnv, "")
	if h, err := newHalter(io.Discard); h != nil || err != nil {
		t.Fatalf("unset: %v, %v", h, err)
	}
	h0 := (*halter)(nil)
	h0.reached("documents written") // a nil halter counts nothing
	for _, bad := range []string{"documents written", "documents written:0", ":3", "x:-1", "x:y"} {
		t.Setenv(haltEnv, bad)
		if _, err := newHalter(io.Discard); err == nil {
			t.Errorf("%s=%q accepted", haltEnv, bad)
		}
	}
	t.Setenv(haltEnv, "a:b:12")
	h, err := newHalter(io.Discard)
	if err != nil || h.step != "a:b" || h.at != 12 {
		t.Fatalf("a:b:12: %+v, %v", h, err)
	}
	for range 11 {
		h.reached("a:b") // below the count: goes on
	}
	h.reached("other")
	if h.seen != 11 {
		t.Errorf("counted %d steps, want 11", h.seen)
	}
}
