//go:build unix

package load

// Directory leases: an exclusive flock on <dir>/_denorm/<id>.lock, whose
// contents (the holder as JSON, rewritten by each heartbeat) are only for
// messages and status. The lock itself is the truth: the kernel releases
// it when the process ends, however it ends, so a crashed run's job can be
// resumed at once. Lock files are never removed (removing one while
// another process opens it would let two processes lock two files of
// the same name).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// lockWait is how long taking a lock retries while it is held: status
// holds a job's lock for an instant to see whether anyone holds it.
const lockWait = 250 * time.Millisecond

func (s *dirRecords) lockPath(id string) string {
	return filepath.Join(s.dir, RecordCollection, id+".lock")
}

func (s *dirRecords) AcquireLease(ctx context.Context, id string, h LeaseHolder, _ time.Duration) (Lease, error) {
	path := s.lockPath(id)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("take the lease of job %q: %w", id, newFileError(s.dir, "create", filepath.Dir(path), err))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("take the lease of job %q: %w", id, newFileError(s.dir, "open", path, err))
	}
	if err := lockFile(ctx, f, syscall.LOCK_EX); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			held, _ := readHolder(path)
			return nil, &LeaseHeldError{ID: id, Where: path, Holder: held}
		}
		return nil, fmt.Errorf("take the lease of job %q (%s): %w", id, path, err)
	}
	now := time.Now().UTC()
	h.Started, h.Heartbeat, h.Expires = now, now, time.Time{}
	l := &dirLease{f: f, dir: s.dir, path: path, id: id, holder: h}
	if err := l.write(); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// lockFile takes an flock of kind how on f without blocking, retrying
// for lockWait while another process holds it (EWOULDBLOCK then).
func lockFile(ctx context.Context, f *os.File, how int) error {
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// readHolder reads a lock file's holder (the zero holder when it cannot).
func readHolder(path string) (LeaseHolder, error) {
	var h LeaseHolder
	b, err := os.ReadFile(path)
	if err != nil {
		return h, err
	}
	err = json.Unmarshal(b, &h)
	return h, err
}

func (s *dirRecords) Leases(ctx context.Context) ([]LeaseState, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, RecordCollection))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read leases: %w", err)
	}
	var out []LeaseState
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok {
			continue
		}
		path := s.lockPath(id)
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("read leases: %w", err)
		}
		// Nobody holds the lock when a shared one can be taken.
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		live := errors.Is(err, syscall.EWOULDBLOCK)
		f.Close() // releases the shared lock, if taken
		if err != nil && !live {
			return nil, fmt.Errorf("read lease %s: %w", path, err)
		}
		h, _ := readHolder(path)
		out = append(out, LeaseState{ID: id, Holder: h, Live: live})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// dirLease is a held lock.
type dirLease struct {
	f      *os.File
	dir    string // the target directory
	path   string
	id     string
	holder LeaseHolder
}

func (l *dirLease) ID() string            { return l.id }
func (l *dirLease) Holder() LeaseHolder   { return l.holder }
func (l *dirLease) ValidUntil() time.Time { return time.Time{} }

func (l *dirLease) write() error {
	b, err := json.Marshal(l.holder)
	if err != nil {
		return err
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("write the lease of job %q: %w", l.id, newFileError(l.dir, "truncate", l.path, err))
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("write the lease of job %q: %w", l.id, newFileError(l.dir, "write", l.path, err))
	}
	return nil
}

// Renew records the heartbeat; the lock is lost only when its file was
// removed or replaced (then another process may lock the new one).
func (l *dirLease) Renew(context.Context) error {
	mine, err1 := l.f.Stat()
	now, err2 := os.Stat(l.path)
	if err1 != nil || err2 != nil || !os.SameFile(mine, now) {
		return &LeaseLostError{ID: l.id, Where: l.path, Reason: "its lock file was removed or replaced"}
	}
	l.holder.Heartbeat = time.Now().UTC()
	return l.write()
}

func (l *dirLease) Release(context.Context) error { return l.close() }

func (l *dirLease) close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the only descriptor releases the flock
	l.f = nil
	return err
}

// lockWriter locks a collection's file for this process's writes, or
// fails naming the file when another process writes it. The lock ends
// with the file's descriptor (Close, or the process's end).
func lockWriter(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return fmt.Errorf("%s is being written by another process (another denorm run into this directory); wait for it to finish", f.Name())
	}
	if err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}
