package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/denorm/denorm/load"
)

// maxDocSizeLimit is the largest --max-doc-size: a BSON document's length
// is an int32.
const maxDocSizeLimit = math.MaxInt32

// checkRange is a usage error unless lo <= v <= hi for the integer flag.
func checkRange(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usageError{fmt.Errorf("%s %d: must be between %d and %d", flag, v, lo, hi)}
	}
	return nil
}

// checkDir is a usage error unless path (when given) is a directory.
func checkDir(flag, path string) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", flag, err)}
	}
	if !st.IsDir() {
		return usageError{fmt.Errorf("%s %s: not a directory", flag, path)}
	}
	return nil
}

// checkCollections is a usage error when --collections holds an empty
// name ("a,,b"); unknown names are told once the mapping is read
// (openPlan).
func checkCollections(names []string) error {
	for _, c := range names {
		if strings.TrimSpace(c) == "" {
			return usageError{fmt.Errorf("--collections %q: an empty collection name", strings.Join(names, ","))}
		}
	}
	return nil
}

// checkLimit is a usage error for a negative --limit (0: no limit).
func checkLimit(n int) error {
	if n < 0 {
		return usageError{fmt.Errorf("--limit %d: cannot be negative (0: no limit)", n)}
	}
	return nil
}

// checkOutFile is a usage error when the directory of an output file
// (--summary-file) does not exist: told before the run, not after it.
func checkOutFile(flag, path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usageError{fmt.Errorf("%s %s: no directory %s to write it in", flag, path, dir)}
	}
	return nil
}

// checkTarget is a usage error when --target cannot name a target (an
// unknown scheme, a PostgreSQL URL, ...): told before connecting anywhere.
func checkTarget(target string) error {
	if _, _, err := load.ParseTarget(target); err != nil {
		return usageError{err}
	}
	return nil
}
