package load

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// open opens a collection's file for writing. On a fresh run (no acked
// lengths) the file is emptied; when resuming, it keeps the first
// acked[name] bytes (name is the file's base name) and drops what follows:
// what was written after the checkpoint that recorded the lengths. Files
// not in acked are emptied, as on a fresh run.
//
// The file is locked first (lockWriter): two processes writing one file
// would interleave and overwrite each other's lines.
func (s *dirTarget) open(collection string) (*os.File, error) {
	path, err := s.path(collection)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, s.fileErr("open", path, err)
	}
	if err := lockWriter(f); err != nil {
		f.Close()
		return nil, err
	}
	var off int64
	var st os.FileInfo
	if s.acked != nil {
		off = s.acked[filepath.Base(path)]
		st, err = f.Stat()
	}
	if err == nil && st != nil && st.Size() < off {
		err = fmt.Errorf("%s is %d bytes, shorter than the %d bytes the checkpoint recorded: the file was changed since; start over with --restart", path, st.Size(), off)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(off); err != nil {
		f.Close()
		return nil, s.fileErr("truncate", path, err)
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, s.fileErr("seek", path, err)
	}
	return f, nil
}

// Sync flushes every file to stable storage and returns each file's length
// (by base name): what a checkpoint records as acknowledged.
func (s *dirTarget) Sync(context.Context) (map[string]int64, error) {
	out := make(map[string]int64, len(s.files))
	for _, df := range s.files {
		if err := df.w.Flush(); err != nil {
			return nil, s.fileErr("write", df.f.Name(), err)
		}
		if err := df.f.Sync(); err != nil {
			return nil, s.fileErr("sync", df.f.Name(), err)
		}
		off, err := df.f.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, s.fileErr("seek", df.f.Name(), err)
		}
		out[filepath.Base(df.f.Name())] = off
	}
	return out, nil
}
