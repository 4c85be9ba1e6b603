package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/denorm/denorm/transform"
	"github.com/denorm/denorm/transform/report"
)

// maxRejectsUsage is --max-rejects' help, the same in migrate and sync.
const maxRejectsUsage = "stop once N rows were rejected, what was written and applied saved (exit 5; a --job continues from there); 0: never stop for rejects"

// rejectLog counts rejected rows, logs the first 20 of them (all with
// -v) and, with --rejects, lists every one in a JSON Lines file; migrate
// and sync share it.
type rejectLog struct {
	g     *globals
	path  string
	mu    sync.Mutex
	count int64
	file  *os.File
	enc   *json.Encoder
	// err is the first error writing the file (a full disk), listed the
	// rows written before it.
	err    error
	listed int64
	told   bool
	// limit is --max-rejects (0: none): stop is called once the limit'th
	// row is rejected.
	limit int64
	stop  func()
}

// openRejects opens path (if any) for the run's rejects: appended to
// when appending, emptied otherwise.
func openRejects(g *globals, path string, appending bool) (*rejectLog, error) {
	l := &rejectLog{g: g, path: path}
	if path == "" {
		return l, nil
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if appending {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("rejects file: %w", err)
	}
	l.file, l.enc = f, json.NewEncoder(f)
	return l, nil
}

// add records one rejected row; it is safe for concurrent use.
func (l *rejectLog) add(r transform.Reject) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	if l.enc != nil && l.err == nil {
		if err := l.enc.Encode(map[string]string{"collection": r.Collection, "source": r.Source, "error": r.Err.Error()}); err != nil {
			l.err, l.listed = err, l.count-1
		}
	}
	if l.count <= rejectsShown || l.g.verbose {
		l.g.log.Warn("rejected", "collection", r.Collection, "source", r.Source, "error", r.Err)
	}
	if l.limit > 0 && l.count == l.limit && l.stop != nil {
		l.stop()
	}
}

// rejectsShown is how many rejected rows stderr shows (all with -v).
const rejectsShown = 20

// tell says where the rejected rows are: how many stderr did not show
// and the file that lists them. It is said once.
func (l *rejectLog) tell() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.told || l.count == 0 {
		return
	}
	l.told = true
	more := l.count - rejectsShown
	switch {
	case more <= 0 || l.g.verbose:
		if l.path != "" {
			l.g.logger().Info("rejected rows are listed in " + l.path)
		}
	case l.path != "":
		l.g.logger().Info(fmt.Sprintf("... and %d more in %s (%s rejected in all)", more, l.path, report.Plural(l.count, "row", "rows")))
	default:
		l.g.logger().Warn(fmt.Sprintf("... and %d more not shown (%s rejected in all): --rejects FILE lists every one, -v shows every one here", more, report.Plural(l.count, "row", "rows")))
	}
}

// result is nil when nothing was rejected, and otherwise says where the
// rejects are listed and returns the error for exit code 3.
func (l *rejectLog) result() error {
	if err := l.flush(); err != nil {
		return err
	}
	n := l.total()
	if n == 0 {
		return nil
	}
	l.tell()
	return rejectedError{n}
}

// total is the number of rows rejected so far.
func (l *rejectLog) total() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count
}

// flush writes the rejects file out to disk; its error says how many
// rows the file lists when it could not be written in full.
func (l *rejectLog) flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil && l.err == nil {
		if err := l.file.Sync(); err != nil {
			l.err, l.listed = err, -1
		}
	}
	if l.err != nil {
		listed := fmt.Sprintf("it lists the first %d", l.listed)
		if l.listed < 0 {
			listed = "what it lists may be cut short"
		}
		return fmt.Errorf("%s, but the rejects file %s could not be written (%v): %s; free space there (or give --rejects another file) and run again",
			report.Plural(l.count, "row was rejected", "rows were rejected"), l.path, l.err, listed)
	}
	return nil
}

func (l *rejectLog) close() {
	if l.file != nil {
		_ = l.file.Close()
	}
}
