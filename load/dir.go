package load

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/denorm/denorm/transform"
)

// DirSink writes each collection to <dir>/<collection>.jsonl as relaxed
// Extended JSON, one document a line: what mongoimport reads. Files are
// rewritten from scratch by every run, so a rerun gives the same files.
type DirSink struct {
	dir   string
	opt   Options
	files map[string]*dirFile
	buf   []byte
	// resume, when set (Resume), holds the acknowledged length of each
	// file: Prepare truncates to it instead of emptying the file.
	resume map[string]int64
}

type dirFile struct {
	f *os.File
	w *bgWriter
}

// OpenDir creates dir if needed.
func OpenDir(dir string, opt Options) (*DirSink, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("target directory: %w", err)
	}
	return &DirSink{dir: dir, opt: opt.withDefaults(), files: map[string]*dirFile{}}, nil
}

// Path is the file a collection is written to.
func (s *DirSink) Path(collection string) string {
	return filepath.Join(s.dir, collection+".jsonl")
}

// Prepare truncates the file of every collection.
func (s *DirSink) Prepare(_ context.Context, collections []string) error {
	for _, c := range collections {
		if _, ok := s.files[c]; ok {
			continue
		}
		f, err := s.open(c)
		if err != nil {
			return fmt.Errorf("target directory: %w", err)
		}
		s.files[c] = &dirFile{f: f, w: newBGWriter(f, 256<<10)}
	}
	return nil
}

// Write appends docs to the collection's file.
func (s *DirSink) Write(ctx context.Context, collection string, docs []transform.Document) ([]Reject, error) {
	df := s.files[collection]
	if df == nil {
		if err := s.Prepare(ctx, []string{collection}); err != nil {
			return nil, err
		}
		df = s.files[collection]
	}
	var rejects []Reject
	for _, d := range docs {
		var err error
		s.buf, err = appendJSONLine(s.buf[:0], d, s.opt.MaxDocSize)
		if err != nil {
			rejects = append(rejects, Reject{Collection: collection, ID: d.ID, Source: d.Source, Err: err})
			continue
		}
		if _, err := df.w.Write(s.buf); err != nil {
			return rejects, fmt.Errorf("write %s: %w", df.f.Name(), err)
		}
	}
	return rejects, nil
}

// Close flushes and closes every file.
func (s *DirSink) Close(context.Context) error {
	var first error
	for _, df := range s.files {
		if err := df.w.Close(); err != nil && first == nil {
			first = fmt.Errorf("write %s: %w", df.f.Name(), err)
		}
		if err := df.f.Close(); err != nil && first == nil {
			first = fmt.Errorf("close %s: %w", df.f.Name(), err)
		}
	}
	s.files = map[string]*dirFile{}
	return first
}

// appendJSONLine appends d as one line of relaxed Extended JSON, unless
// its BSON size is over the limit.
func appendJSONLine(dst []byte, d transform.Document, maxSize int) ([]byte, error) {
	start := len(dst)
	dst, size, err := AppendExtJSONSized(dst, d.Body)
	if err != nil {
		return dst[:start], err
	}
	if size > maxSize {
		return dst[:start], &TooLargeError{Size: size, Limit: maxSize}
	}
	return append(dst, '\n'), nil
}
