package load

// Whether a lease's holder on this machine is gone. A lease records the
// process that holds it: host, pid and where that pid means something
// (the boot and the PID namespace, procSpace). A run that finds its job's
// lease live, held on the same host and in the same PID space by a
// process that no longer runs (or a pid now used by a process started
// after the lease was taken), takes the lease over at once instead of
// waiting for it to expire: a follower killed with kill -9 and restarted
// does not block its own restart for the lease's time to live.

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// procSpace names where this process's pid is meaningful: the boot's id
// and the PID namespace, "" where they cannot be read (then no holder is
// ever found gone this way).
var procSpace = sync.OnceValue(func() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
})

// holderGone reports whether the holder d names - on host h.Host, in this
// process's PID space - is not running: its pid is free, or belongs to a
// process started after d took the lease.
func holderGone(d *leaseDoc, h LeaseHolder) bool {
	if d.Host != h.Host || d.Space == "" || d.Space != h.space || d.PID == h.PID || d.PID <= 0 {
		return false
	}
	started, ok := procStart(d.PID)
	if !ok {
		return true // no such process
	}
	// The same pid, started after the lease was taken: another process.
	return started.After(d.Started.Add(2 * time.Second))
}

// procStart is when process pid started (ok false: no such process).
func procStart(pid int) (time.Time, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, false
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): starttime is the 22nd field, in clock ticks after boot.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return time.Time{}, true
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return time.Time{}, true
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64)
	boot := bootTime()
	if err != nil || boot.IsZero() {
		return time.Time{}, true
	}
	const hz = 100 // USER_HZ, 100 on every Linux
	return boot.Add(time.Duration(ticks) * time.Second / hz), true
}

// bootTime is when the machine booted (/proc/stat btime), zero when not
// known.
var bootTime = sync.OnceValue(func() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(n, 0)
			}
		}
	}
	return time.Time{}
})
