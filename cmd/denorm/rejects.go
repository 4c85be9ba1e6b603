package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/denorm/denorm/transform"
	"github.com/denorm/denorm/transform/report"
)

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
	if l.count <= 20 || l.g.verbose {
		l.g.log.Warn("rejected", "collection", r.Collection, "source", r.Source, "error", r.Err)
	}
}

// result is nil when nothing was rejected, and otherwise says where the
// rejects are listed and returns the error for exit code 3.
func (l *rejectLog) result() error {
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
	if l.count == 0 {
		return nil
	}
	if l.path != "" {
		l.g.logger().Info("rejected rows are listed in " + l.path)
	}
	return rejectedError{l.count}
}

func (l *rejectLog) close() {
	if l.file != nil {
		_ = l.file.Close()
	}
}
