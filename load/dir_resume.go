package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/denorm/denorm/transform"
)

// open opens a collection's file for writing. When resuming (acked
// holds the file's length, by its base name), it keeps the first
// acked[name] bytes and drops what follows: what was written after the
// checkpoint that recorded the lengths. Otherwise the file starts afresh:
// emptied, or, for a shared collection (Prepare's types), rid of the
// lines of the run's own document types (dir_shared.go); writes append.
//
// The file is locked first (lockWriter): two processes writing one file
// would interleave and overwrite each other's lines.
func (s *dirTarget) open(collection string) (*os.File, error) {
	path, err := s.path(collection)
	if err != nil {
		return nil, err
	}
	f, err := openLocked(s, path)
	if err != nil {
		return nil, err
	}
	off, resumed := s.acked[filepath.Base(path)]
	types := s.types[collection]
	switch {
	case resumed:
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, s.fileErr("stat", path, err)
		}
		if st.Size() < off {
			f.Close()
			return nil, fmt.Errorf("%s is %d bytes, shorter than the %d bytes the checkpoint recorded: the file was changed since; start over with --restart", path, st.Size(), off)
		}
	case len(types) > 0:
		// Lines of other types stay; the file is rewritten without
		// the run's, then the new file is the one locked.
		removed, err := s.removeTypes(path, types)
		if err != nil {
			f.Close()
			return nil, err
		}
		if removed > 0 {
			nf, err := openLocked(s, path)
			f.Close()
			if err != nil {
				return nil, err
			}
			f = nf
		}
		if off, err = f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return nil, s.fileErr("seek", path, err)
		}
	}
	// Truncated only when it is longer: ext4 takes a truncation to zero,
	// even of an empty file, as a file being replaced, and starts writing
	// back all of it when it is closed (auto_da_alloc), which took 29 ms
	// of close(2) after 240 MB and the CPU to submit it.
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, s.fileErr("stat", path, err)
	}
	if st.Size() != off {
		if err := f.Truncate(off); err != nil {
			f.Close()
			return nil, s.fileErr("truncate", path, err)
		}
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, s.fileErr("seek", path, err)
	}
	return f, nil
}

// openLocked opens (or creates) path for writing and locks it.
func openLocked(s *dirTarget, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, s.fileErr("open", path, err)
	}
	if err := lockWriter(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// deleteType removes the lines of one document type from a collection's
// file (open for writing or not) and returns how many it removed.
func (s *dirTarget) deleteType(collection string, typ transform.Field) (int64, error) {
	path, err := s.path(collection)
	if err != nil {
		return 0, err
	}
	df := s.files[collection]
	if df == nil {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		f, err := openLocked(s, path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		return s.removeTypes(path, []transform.Field{typ})
	}
	if err := df.w.Flush(); err != nil {
		return 0, s.fileErr("write", path, err)
	}
	n, err := s.removeTypes(path, []transform.Field{typ})
	if err != nil || n == 0 {
		return n, err
	}
	// The file was replaced: write on to the new one, at its end.
	nf, err := openLocked(s, path)
	if err == nil {
		if _, err = nf.Seek(0, io.SeekEnd); err != nil {
			nf.Close()
			err = s.fileErr("seek", path, err)
		}
	}
	if err != nil {
		return n, err
	}
	_ = df.w.Close()
	df.f.Close()
	s.files[collection] = &dirFile{f: nf, w: newBGWriter(nf, 256<<10)}
	return n, nil
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
