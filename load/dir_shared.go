package load

// Shared collections in a directory target: several mappings (or runs
// with --collections) may write document types of one collection into
// its one file. A run replaces only the documents of its own types, as on
// a server: starting afresh, it removes the lines of its types from the
// file and keeps every other line (documents of other types, and lines
// without the discriminator field) in order; its own documents follow
// them. --restart and --drop of a mapping's types remove those lines and
// no others.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/denorm/denorm/transform"
)

// Collection is a collection a run writes, as Prepare takes it.
type Collection struct {
	Name string
	// Types are the document types the run writes into a shared
	// collection (a mapping's discriminator field, one value each); the
	// run replaces only documents of these types. Empty: the run writes
	// the collection whole.
	Types []transform.Field
}

// Collections are the names given, each written whole.
func Collections(names ...string) []Collection {
	out := make([]Collection, len(names))
	for i, n := range names {
		out[i] = Collection{Name: n}
	}
	return out
}

// typeFilter tells the documents that have one of some top-level values
// (document types of a shared collection), as a server's filter {key:
// value} does: numbers equal by value whatever their BSON type, other
// values by type and bytes. One goroutine at a time uses it.
type typeFilter struct {
	want []transform.Field
	enc  []bsoncore.Value // want's values as BSON
	doc  []byte           // the line being looked at, as BSON
}

// newTypeFilter returns the filter of the document types want.
func newTypeFilter(want []transform.Field) (*typeFilter, error) {
	m := &typeFilter{want: want}
	for _, f := range want {
		raw, err := AppendDocument(nil, transform.Doc{{Key: "v", Value: f.Value}})
		if err != nil {
			return nil, fmt.Errorf("document type %s=%v: %w", f.Key, f.Value, err)
		}
		m.enc = append(m.enc, bsoncore.Document(raw).Lookup("v"))
	}
	return m, nil
}

// TypeMatcher returns the test of whether a BSON document is of one of
// types (document types of a shared collection), as a run tells the
// documents it replaces from those of other mappings; nil when types is
// empty (the collection is written whole). One goroutine at a time may
// call it.
func TypeMatcher(types []transform.Field) (func(doc []byte) bool, error) {
	if len(types) == 0 {
		return nil, nil
	}
	m, err := newTypeFilter(types)
	if err != nil {
		return nil, err
	}
	return m.matchDoc, nil
}

// match reports whether one line (a relaxed Extended JSON document) has
// one of the types.
func (m *typeFilter) match(line []byte) (bool, error) {
	var err error
	if m.doc, err = UnmarshalExtJSON(m.doc[:0], line); err != nil {
		return false, err
	}
	return m.matchDoc(m.doc), nil
}

// matchDoc reports whether doc (BSON) has one of the types.
func (m *typeFilter) matchDoc(doc []byte) bool {
	for i, f := range m.want {
		v, err := bsoncore.Document(doc).LookupErr(f.Key)
		if err == nil && sameScalar(v, m.enc[i]) {
			return true
		}
	}
	return false
}

// index is the position of the type whose value v is, -1 when none.
func (m *typeFilter) index(v bsoncore.Value) int {
	for i := range m.want {
		if sameScalar(v, m.enc[i]) {
			return i
		}
	}
	return -1
}

// sameScalar compares two values as a server's equality filter does for
// scalars: numbers by value (int32 5, int64 5 and double 5.0 are equal),
// anything else by type and bytes.
func sameScalar(a, b bsoncore.Value) bool {
	if x, ok := numberOf(a); ok {
		y, ok := numberOf(b)
		return ok && x == y
	}
	return a.Type == b.Type && string(a.Data) == string(b.Data)
}

// numberOf is v as a number exact enough to compare the values a
// discriminator holds (int64 beyond 2^53 compares as its nearest double).
func numberOf(v bsoncore.Value) (float64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return float64(v.Int32()), true
	case bsoncore.TypeInt64:
		return float64(v.Int64()), true
	case bsoncore.TypeDouble:
		d := v.Double()
		return d, !math.IsNaN(d)
	}
	return 0, false
}

// removeTypes rewrites path without the lines of the document types in
// types (a new file renamed over it, flushed to disk: a crash leaves the
// old file or the new one) and returns how many lines it removed. A file
// that does not exist has none.
func (s *dirTarget) removeTypes(path string, types []transform.Field) (int64, error) {
	m, err := newTypeFilter(types)
	if err != nil {
		return 0, err
	}
	in, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, s.fileErr("open", path, err)
	}
	defer in.Close()
	tmp := path + ".tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return 0, s.fileErr("create", tmp, err)
	}
	done := false
	defer func() {
		if !done {
			out.Close()
			os.Remove(tmp)
		}
	}()
	w := bufio.NewWriterSize(out, 256<<10)
	r := bufio.NewReaderSize(in, 256<<10)
	var removed int64
	for n := 1; ; n++ {
		line, rerr := r.ReadSlice('\n')
		for errors.Is(rerr, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it.
			long := append([]byte(nil), line...)
			var more []byte
			more, rerr = r.ReadSlice('\n')
			line = append(long, more...)
		}
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return removed, s.fileErr("read", path, rerr)
		}
		if len(line) > 0 {
			body := line
			if body[len(body)-1] == '\n' {
				body = body[:len(body)-1]
			}
			drop := false
			if len(body) > 0 {
				if drop, err = m.match(body); err != nil {
					return removed, fmt.Errorf("%s:%d: not an Extended JSON document (%v): the file was not written by denorm; move it away or migrate with --drop", path, n, err)
				}
			}
			if drop {
				removed++
			} else if _, err := w.Write(line); err != nil {
				return removed, s.fileErr("write", tmp, err)
			}
		}
		if rerr != nil {
			break
		}
	}
	if removed == 0 {
		return 0, nil // nothing to rewrite
	}
	if err := w.Flush(); err != nil {
		return removed, s.fileErr("write", tmp, err)
	}
	if err := out.Sync(); err != nil {
		return removed, s.fileErr("sync", tmp, err)
	}
	if err := out.Close(); err != nil {
		return removed, s.fileErr("close", tmp, err)
	}
	done = true
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return removed, s.fileErr("rename "+filepath.Base(tmp)+" to", path, err)
	}
	return removed, syncDir(s.dir, filepath.Dir(path))
}
