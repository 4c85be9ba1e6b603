// Package procmem measures the peak resident memory of a child process.
//
// The obvious measure, the rusage ru_maxrss that wait4 returns, is wrong
// for children that Go starts: os/exec starts them with vfork, and at exec
// the kernel records the parent's high-water mark into the child's
// maxrss, so a child of a 200 MB test binary "peaks" at 200 MB. VmHWM in
// /proc/PID/status belongs to the address space the child got at exec, so
// sampling it while the child runs gives the child's own peak.
package procmem

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Run starts cmd, samples its VmHWM every interval until it exits, and
// returns cmd.Wait's error and the highest VmHWM seen, in KiB.
func Run(cmd *exec.Cmd, interval time.Duration) (peakKiB int64, err error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTicker(interval)
	defer t.Stop()
	path := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	for {
		if v, ok := hwm(path); ok && v > peakKiB {
			peakKiB = v
		}
		select {
		case err := <-done:
			if peakKiB == 0 {
				return 0, fmt.Errorf("no memory sample of PID %d (it ran less than %v): %v", cmd.Process.Pid, interval, err)
			}
			return peakKiB, err
		case <-t.C:
		}
	}
}

// hwm reads VmHWM (KiB) from a /proc status file.
func hwm(path string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}
