package main

import (
	"fmt"
	"math"
	"os"

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

// checkTarget is a usage error when --target cannot name a target (an
// unknown scheme, a PostgreSQL URL, ...): told before connecting anywhere.
func checkTarget(target string) error {
	if _, _, err := load.ParseTarget(target); err != nil {
		return usageError{err}
	}
	return nil
}
