package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The machine's CPU: the benchmark machine runs the source and denorm on
// the same cores, so that a run whose processes keep every core busy
// cannot end before their CPU time over the number of cores, however
// the work overlaps. Reading the machine's busy time around a run (every
// process's, the source's backends and the kernel's included) tells a run
// bound by that from one that waits: see TypedScale.CPUBound.

// userHZ is the unit of /proc/stat's times: USER_HZ, 100 on every Linux
// architecture Go builds for (the kernel scales its jiffies to it).
const userHZ = 100

// machineBusy is the time every CPU of the machine has spent busy since
// boot (user, nice, system, irq, softirq and steal: not idle or iowait),
// from /proc/stat; ok is false where there is no such file.
func machineBusy() (busy time.Duration, ok bool) {
	busy, _, ok = readProcStat()
	return busy, ok
}

// machineCores is the number of CPUs /proc/stat lists, over which
// machineBusy's time is spread; runtime.NumCPU where it cannot be read.
func machineCores() int {
	if _, n, ok := readProcStat(); ok && n > 0 {
		return n
	}
	return runtime.NumCPU()
}

// readProcStat is parseProcStat of /proc/stat; ok is false where it
// cannot be read.
func readProcStat() (busy time.Duration, cpus int, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	busy, cpus, err = parseProcStat(f)
	return busy, cpus, err == nil
}

// parseProcStat reads /proc/stat: the busy time of its first line, the
// machine's total ("cpu  user nice system idle iowait irq softirq steal
// guest guest_nice"; guest time is already in user and nice), and the
// number of CPUs, the "cpuN" lines that follow it.
func parseProcStat(r io.Reader) (busy time.Duration, cpus int, err error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		return 0, 0, errors.New("/proc/stat: empty")
	}
	f := strings.Fields(sc.Text())
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, errors.New("/proc/stat: no cpu line")
	}
	var ticks int64
	for i, s := range f[1:min(len(f), 9)] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, errors.New("/proc/stat: " + err.Error())
		}
		ticks += v
	}
	for sc.Scan() {
		name, _, _ := strings.Cut(sc.Text(), " ")
		if n, ok := strings.CutPrefix(name, "cpu"); ok && n != "" {
			if _, err := strconv.Atoi(n); err == nil {
				cpus++
			}
		}
	}
	return time.Duration(ticks) * time.Second / userHZ, cpus, sc.Err()
}

// busyClock measures the machine's busy time from its start to stop.
type busyClock struct {
	start time.Duration
	ok    bool
}

func startBusy() busyClock {
	b, ok := machineBusy()
	return busyClock{start: b, ok: ok}
}

// stop is the machine's busy time since start, 0 where unknown.
func (c busyClock) stop() time.Duration {
	b, ok := machineBusy()
	if !c.ok || !ok {
		return 0
	}
	return b - c.start
}
