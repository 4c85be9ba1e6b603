package load

// Leases: one writer per job. Before a job (migrate, sync) writes anything
// it takes the job's lease from the target's checkpoint store; a second
// run of the same job, or a --restart while it runs, is refused with a
// *LeaseHeldError naming the holder. A server target keeps leases as
// documents of the _denorm collection that expire unless renewed by a
// heartbeat (a crashed holder's lease is taken over once it expired); a
// directory target locks a file under <dir>/_denorm with flock, which the
// operating system releases when the holding process dies.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"
)

// DefaultLeaseTTL is how long a server lease lives without a heartbeat:
// the longest a crashed job blocks the next run. Holders renew it every
// quarter of it.
const DefaultLeaseTTL = 30 * time.Second

// LeaseHolder describes the process holding a job's lease, as the store
// records it and as messages and status show it.
type LeaseHolder struct {
	// Host and PID identify the process; Command is what it runs
	// ("migrate", "sync").
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Command string `json:"command"`
	// Started is when it took the lease, Heartbeat its last renewal.
	Started   time.Time `json:"started"`
	Heartbeat time.Time `json:"heartbeat"`
	// Expires is when the lease may be taken over without a renewal
	// (server targets); zero for a directory target, whose lock lasts as
	// long as the process.
	Expires time.Time `json:"expires,omitzero"`
	// space is where PID means something (procSpace; this process's).
	space string
}

// NewLeaseHolder describes this process running command.
func NewLeaseHolder(command string) LeaseHolder {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return LeaseHolder{Host: host, PID: os.Getpid(), Command: command, space: procSpace()}
}

func (h LeaseHolder) String() string {
	s := fmt.Sprintf("%s on host %s, pid %d, since %s", h.Command, h.Host, h.PID, h.Started.Format(time.RFC3339))
	if !h.Heartbeat.IsZero() {
		s += fmt.Sprintf(", last heartbeat %s", h.Heartbeat.Format(time.RFC3339))
	}
	return s
}

// LeaseState is what a store knows of one job's lease (RecordStore.Leases).
type LeaseState struct {
	// ID is the job's record id (job.RecordID).
	ID     string
	Holder LeaseHolder
	// Live: a process holds the lease now (server: not released and not
	// expired; directory: the lock is held). A lease that is not live
	// was released, or its holder stopped without releasing it (crashed,
	// killed, lost its machine).
	Live bool
	// Released: its holder gave it up (the run ended). Server targets
	// only: a directory lock that is not held does not tell.
	Released bool
}

// Lease is a job's lease held by this process, from
// RecordStore.AcquireLease. One goroutine at a time uses it.
type Lease interface {
	// ID is the job's checkpoint id.
	ID() string
	// Holder is this process as the store records it.
	Holder() LeaseHolder
	// Renew is the heartbeat: it records the time and extends the lease
	// (server targets); a lease that expired meanwhile is taken again
	// unless another run took it over. It returns a *LeaseLostError when
	// the lease is no longer this process's: it expired and another run
	// took it over, or the lock file was removed. After that error the
	// holder must stop writing. Other errors (the server unreachable)
	// leave the lease as it was: Renew again.
	Renew(ctx context.Context) error
	// ValidUntil is the time until which the lease is this process's
	// without another Renew; zero when it cannot expire (a directory
	// lock). A holder saves checkpoints only before it.
	ValidUntil() time.Time
	// Release gives the lease up; the next run takes it at once.
	Release(ctx context.Context) error
}

// LeaseHeldError is a lease another process holds: the job is running
// elsewhere.
type LeaseHeldError struct {
	// ID is the job's checkpoint id, Where the store.
	ID, Where string
	Holder    LeaseHolder
	// Expiring: the lease expires at Holder.Expires unless renewed
	// (server targets), so a crashed holder's lease can be taken then.
	Expiring bool
}

func (e *LeaseHeldError) Error() string {
	msg := fmt.Sprintf("job %q is being run by another process (%s), which holds its lease in %s", e.ID, e.Holder, e.Where)
	if e.Expiring {
		msg += fmt.Sprintf("; if that process is gone, its lease expires at %s and the job can be resumed then", e.Holder.Expires.Format(time.RFC3339))
	}
	return msg
}

// LeaseLostError is a lease this process held and lost: it must stop
// writing, another run may own the job now.
type LeaseLostError struct {
	ID, Where string
	// Reason says how it was lost.
	Reason string
	// By is the process that holds it now, when known.
	By *LeaseHolder
}

func (e *LeaseLostError) Error() string {
	msg := fmt.Sprintf("job %q lost its lease in %s: %s", e.ID, e.Where, e.Reason)
	if e.By != nil {
		msg += fmt.Sprintf("; it is now held by %s", e.By)
	}
	return msg
}

// leaseToken is a random token telling this acquisition from every other.
func leaseToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
