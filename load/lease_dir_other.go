//go:build !unix

package load

import (
	"context"
	"errors"
	"os"
	"time"
)

// Directory leases need flock (Unix); elsewhere a directory target
// cannot hold a job's lease.

func (s *dirRecords) AcquireLease(context.Context, string, LeaseHolder, time.Duration) (Lease, error) {
	return nil, &UnsupportedError{Target: "directory", Op: "lock a job on this operating system"}
}

func (s *dirRecords) Leases(context.Context) ([]LeaseState, error) {
	return nil, errors.ErrUnsupported
}

// lockWriter does nothing without flock: one writer is up to the user.
func lockWriter(*os.File) error { return nil }
