package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// dirTarget writes each collection to <dir>/<collection>.jsonl as relaxed
// Extended JSON, one document a line: what mongoimport reads. Prepare
// starts the files afresh (or at the resumed checkpoint's lengths), so a
// rerun gives the same files.
type dirTarget struct {
	dir   string
	opt   Options
	files map[string]*dirFile
	keys  keyTexts
	// lineKeys is AppendJSONLine's (verify's expected side, while
	// another goroutine scans).
	lineKeys keyTexts
	// readers are ReadLine's open files, by collection.
	readMu  sync.Mutex
	readers map[string]*os.File
	// acked is Prepare's: the file lengths to resume from (nil: fresh).
	acked map[string]int64
	// types are Prepare's: the document types the run writes into each
	// shared collection (dir_shared.go).
	types map[string][]transform.Field
}

type dirFile struct {
	f *os.File
	w *bgWriter
}

// openDir opens the directory target dir; the directory itself is created
// by the first write or checkpoint.
func openDir(dir string, opt Options) *dirTarget {
	return &dirTarget{dir: dir, opt: opt.withDefaults(), files: map[string]*dirFile{}}
}

func (s *dirTarget) Caps() Caps { return Caps{} }

// path is the file a collection is written to, or an error when the
// collection's name is not a safe file name inside the directory (a name
// like "../x" would write outside it).
func (s *dirTarget) path(collection string) (string, error) {
	if why := mappings.CollectionNameProblem(collection); why != "" {
		return "", fmt.Errorf("a directory target cannot hold collection %q: %s", collection, why)
	}
	return filepath.Join(s.dir, collection+".jsonl"), nil
}

// Prepare opens the file of every collection, truncated to its acked
// length (see dir_resume.go).
func (s *dirTarget) Prepare(_ context.Context, collections []Collection, acked map[string]int64) error {
	s.acked = acked
	s.types = map[string][]transform.Field{}
	for _, c := range collections {
		s.types[c.Name] = c.Types
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return s.fileErr("create", s.dir, err)
	}
	for _, c := range collections {
		if err := s.openFile(c.Name); err != nil {
			return err
		}
	}
	return nil
}

func (s *dirTarget) openFile(collection string) error {
	if _, ok := s.files[collection]; ok {
		return nil
	}
	f, err := s.open(collection)
	if err != nil {
		return err
	}
	s.files[collection] = &dirFile{f: f, w: newBGWriter(f, 256<<10)}
	return nil
}

// Write appends docs to the collection's file.
func (s *dirTarget) Write(ctx context.Context, collection string, docs []transform.Document) ([]transform.Reject, error) {
	df := s.files[collection]
	if df == nil {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return nil, s.fileErr("create", s.dir, err)
		}
		if err := s.openFile(collection); err != nil {
			return nil, err
		}
		df = s.files[collection]
	}
	var rejects []transform.Reject
	for _, d := range docs {
		// in place at the end of the file's buffer (bgWriter.filled)
		w := df.w
		start := len(w.buf)
		out, err := appendJSONLine(w.buf, d, s.opt.MaxDocSize, &s.keys)
		w.buf = out
		if err != nil {
			w.buf = out[:start]
			rejects = append(rejects, transform.Reject{Collection: collection, ID: d.ID, Source: d.Source, Err: err})
			continue
		}
		if err := w.filled(); err != nil {
			return rejects, s.fileErr("write", df.f.Name(), err)
		}
		s.opt.wrote(len(out) - start)
	}
	return rejects, nil
}

// Delete empties the collection's file (the zero Selection), without
// counting its lines (-1), or removes the lines of one document type (a
// Selection of one Match field: dir_shared.go) and counts them; it cannot
// drop other chosen documents.
func (s *dirTarget) Delete(_ context.Context, collection string, sel Selection) (int64, error) {
	if sel.IDs == nil && sel.Min == nil && len(sel.Any) == 0 && len(sel.Match) == 1 {
		return s.deleteType(collection, sel.Match[0])
	}
	if !sel.all() {
		return 0, &UnsupportedError{Target: "directory", Op: fmt.Sprintf("delete chosen documents (collection %q)", collection)}
	}
	if df := s.files[collection]; df != nil {
		df.w.Discard()
		if err := df.f.Truncate(0); err != nil {
			return 0, s.fileErr("empty", df.f.Name(), err)
		}
		if _, err := df.f.Seek(0, io.SeekStart); err != nil {
			return 0, s.fileErr("empty", df.f.Name(), err)
		}
		return -1, nil
	}
	path, err := s.path(collection)
	if err != nil {
		return 0, err
	}
	err = os.Truncate(path, 0)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, s.fileErr("empty", path, err)
	}
	return -1, nil
}

// Reopen is refused: one writer keeps a file in order.
func (s *dirTarget) Reopen(context.Context) (Target, error) {
	return nil, &UnsupportedError{Target: "directory", Op: "be written by several writers (--workers, --partition)"}
}

// Close flushes and closes every file.
func (s *dirTarget) Close(context.Context) error {
	var first error
	for _, df := range s.files {
		if err := df.w.Close(); err != nil && first == nil {
			first = s.fileErr("write", df.f.Name(), err)
		}
		if err := df.f.Close(); err != nil && first == nil {
			first = s.fileErr("close", df.f.Name(), err)
		}
	}
	s.files = map[string]*dirFile{}
	s.readMu.Lock()
	for _, f := range s.readers {
		f.Close()
	}
	s.readers = nil
	s.readMu.Unlock()
	return first
}

// appendJSONLine appends d as one line of relaxed Extended JSON, unless
// its BSON size is over the limit.
func appendJSONLine(dst []byte, d transform.Document, maxSize int, keys *keyTexts) ([]byte, error) {
	start := len(dst)
	if d.Body == nil && d.Raw != nil {
		// A document given as BSON only (sync, which directories do not
		// take, writes such): its fields, to write as JSON.
		body, err := DecodeDocument(d.Raw)
		if err != nil {
			return dst, err
		}
		d.Body = body
	}
	dst, size, err := keys.doc(dst, d.Body, 1) // checks what CheckKeys does, in the same walk
	if err != nil {
		// CheckKeys' problems come first, spelled by it.
		if kerr := transform.CheckKeys(d.Body); kerr != nil {
			return dst[:start], kerr
		}
		if err == errUnstorable { // cannot be: the walk and CheckKeys disagree
			return dst[:start], fmt.Errorf("internal error: the JSON writer refused a document CheckKeys accepts")
		}
		return dst[:start], fieldErr(err)
	}
	if size > maxSize {
		return dst[:start], &TooLargeError{Size: size, Limit: maxSize}
	}
	return append(dst, '\n'), nil
}
