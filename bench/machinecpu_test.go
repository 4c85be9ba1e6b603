package main

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	const stat = `cpu  1000 20 300 99999 555 7 8 9 400 0
cpu0 500 10 150 50000 300 3 4 5 200 0
cpu1 500 10 150 49999 255 4 4 4 200 0
intr 12345 0 0
ctxt 999
cpufreq 1
`
	busy, n, err := parseProcStat(strings.NewReader(stat))
	if err != nil {
		t.Fatal(err)
	}
	// user+nice+system+irq+softirq+steal, not idle, iowait or guest
	// (already in user): 1000+20+300+7+8+9 ticks of 10 ms.
	if want := 1344 * 10 * time.Millisecond; busy != want {
		t.Errorf("busy %v, want %v", busy, want)
	}
	if n != 2 {
		t.Errorf("%d CPUs, want 2 (cpu0, cpu1; not cpufreq)", n)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu  1 2 x 4 5\n", "cpu 1 2\n"} {
		if _, _, err := parseProcStat(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestBusyClock: the machine's busy time over a stretch of spinning on
// every core is about the spinning's CPU time (other processes only add
// to it), and the cores counted are the machine's.
func TestBusyClock(t *testing.T) {
	if _, ok := machineBusy(); !ok {
		t.Skip("no /proc/stat on this system")
	}
	if n := machineCores(); n < 1 || n < runtime.NumCPU() {
		t.Fatalf("%d cores counted, runtime.NumCPU %d", n, runtime.NumCPU())
	}
	const spin = 300 * time.Millisecond
	c := startBusy()
	done := make(chan struct{})
	for range 2 {
		go func() {
			for end := time.Now().Add(spin); time.Now().Before(end); {
			}
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	got := c.stop()
	// Two goroutines spinning 300 ms each: at least 600 ms of CPU on a
	// machine of two cores or more, less the clock's tick on each end.
	if want := 2*spin - 50*time.Millisecond; runtime.NumCPU() >= 2 && got < want {
		t.Errorf("busy %v over two spinning goroutines of %v, want at least %v", got, spin, want)
	}
	if got <= 0 {
		t.Errorf("busy %v", got)
	}
}
