package load

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// FileError is a file of a directory target that could not be written:
// created, written, flushed to disk, closed, renamed into place,
// truncated or removed. It is the target's failure, never the source's:
// the run stops, and the last checkpoint saved stands.
type FileError struct {
	// Dir is the target directory, Path the file (under Dir, or Dir
	// itself), Op what was done to it ("write", "sync", "rename", ...).
	Dir, Path, Op string
	// Err is the system's error without the path (no *os.PathError).
	Err error
}

func (e *FileError) Error() string {
	name := e.Path
	if rel, err := filepath.Rel(e.Dir, e.Path); err == nil && rel != "." && !filepath.IsAbs(rel) && rel[0] != '.' {
		name = rel
	}
	msg := fmt.Sprintf("target directory %s: cannot %s %s: %v", e.Dir, e.Op, name, e.Err)
	if hint := fileHint(e.Err); hint != "" {
		msg += " (" + hint + ")"
	}
	return msg
}

func (e *FileError) Unwrap() error { return e.Err }

// fileHint says what to do about a file system's refusal, where the
// system's words do not.
func fileHint(err error) string {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return "the file system holding the target directory is full: free space on it"
	case errors.Is(err, syscall.EDQUOT):
		return "the disk quota of this user is used up: free space or raise the quota"
	case errors.Is(err, syscall.EFBIG):
		return "the file is over the largest size this process may write (ulimit -f) or the file system holds: raise the limit, or split the collection"
	case errors.Is(err, syscall.EROFS):
		return "the file system is mounted read-only"
	case errors.Is(err, fs.ErrPermission):
		return "denorm may not write there: check the directory's owner and permissions"
	case errors.Is(err, syscall.EIO):
		return "the device reported an input/output error: check the disk"
	}
	return ""
}

// fileErr is the *FileError of op on path, an error of the os package.
func (s *dirTarget) fileErr(op, path string, err error) error {
	return newFileError(s.dir, op, path, err)
}

func newFileError(dir, op, path string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FileError
	if errors.As(err, &fe) {
		return err
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		err = le.Err
	}
	return &FileError{Dir: dir, Path: path, Op: op, Err: err}
}

// writeFileAtomic replaces path by data: written to a temporary file
// beside it, flushed to disk, renamed over path, and the directory flushed
// so the rename lasts. A failure leaves path as it was (and no temporary
// file) and is a *FileError naming the step that failed.
func writeFileAtomic(dir, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return newFileError(dir, "create", tmp, err)
	}
	op := "write"
	_, err = f.Write(data)
	if err == nil {
		op = "sync"
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		op, err = "close", cerr
	}
	if err == nil {
		op = "rename"
		if err = os.Rename(tmp, path); err == nil {
			return syncDir(dir, filepath.Dir(path))
		}
	}
	_ = os.Remove(tmp)
	if op == "rename" {
		return newFileError(dir, "rename "+filepath.Base(tmp)+" to", path, err)
	}
	return newFileError(dir, op, tmp, err)
}

// syncDir flushes a directory's entries (a file created or renamed in it)
// to disk.
func syncDir(dir, path string) error {
	d, err := os.Open(path)
	if err != nil {
		return newFileError(dir, "open", path, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, syscall.EINVAL) { // some file systems cannot sync a directory
		return newFileError(dir, "sync", path, err)
	}
	return nil
}
