package procmem

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestRunMeasuresTheChild: a child that allocates 64 MiB peaks above 64
// MiB, and one that allocates nothing stays far below, whatever the
// parent's own size (held at 128 MiB here).
func TestRunMeasuresTheChild(t *testing.T) {
	if os.Getenv("PROCMEM_CHILD") != "" {
		if os.Getenv("PROCMEM_CHILD") == "big" {
			b := make([]byte, 64<<20)
			for i := range b {
				b[i] = 1
			}
			time.Sleep(100 * time.Millisecond)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
		os.Exit(0)
	}
	ballast := make([]byte, 128<<20)
	for i := range ballast {
		ballast[i] = 2
	}
	run := func(kind string) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRunMeasuresTheChild$")
		cmd.Env = append(os.Environ(), "PROCMEM_CHILD="+kind)
		kib, err := Run(cmd, 5*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		return kib
	}
	big, small := run("big"), run("small")
	t.Logf("child peaks: big %d KiB, small %d KiB (parent holds %d KiB)", big, small, len(ballast)>>10)
	if big < 64<<10 {
		t.Errorf("big child peak %d KiB, want at least %d", big, 64<<10)
	}
	if small > 48<<10 {
		t.Errorf("small child peak %d KiB: the parent's memory leaked into the measure", small)
	}
	_ = ballast[len(ballast)-1]
}
