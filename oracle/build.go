package oracle

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/mappings"
)

// Doc is one document the oracle built from a query's rows, or the reason
// it could not: the row (or bucket page) is unbuildable, as migrate
// rejects it.
type Doc struct {
	// Source names the source row or bucket page.
	Source string
	// BSON is the document, encoded by the driver's own encoder (nil when
	// Err is set).
	BSON []byte
	// Err says why the document cannot be written.
	Err error
}

// IsUnbuildable reports whether err is a value the target cannot hold
// (the document is rejected), rather than a failure of the oracle.
func IsUnbuildable(err error) bool {
	var u *unbuildable
	return errors.As(err, &u)
}

// Documents turns the rows of q's SQL into documents. One Documents is
// used by one goroutine: feed it every row in order with Row, then call
// Flush once.
type Documents struct {
	q *Query
	// The bucket pager: the current parent, its page, the items held back
	// for SkipLast.
	pkey     string
	inParent bool
	parent   []any
	page     int
	items    bson.A
	held     []bson.D
}

// Documents starts building q's documents.
func (q *Query) Documents() *Documents { return &Documents{q: q} }

// Columns is the number of columns a row of q's SQL has.
func (q *Query) Columns() int {
	if q.bucket != nil {
		return 4
	}
	return 2
}

// Row takes the text of one row's columns (NULL as nil) and returns the
// documents it completes. The error is the oracle's own failure (its
// query gave something it does not understand); unbuildable documents
// come back as Docs with Err.
func (d *Documents) Row(cols [][]byte) ([]Doc, error) {
	if len(cols) != d.q.Columns() {
		return nil, fmt.Errorf("oracle: a row of %d columns, want %d", len(cols), d.q.Columns())
	}
	src := string(cols[0])
	if d.q.bucket == nil {
		doc, err := readDoc(&reader{b: cols[1]}, d.q.doc)
		if err == nil {
			err = checkNames(doc, "", 1)
		}
		return []Doc{finish(src, doc, err)}, internal(err)
	}
	return d.bucketRow(src, cols)
}

// internal is err when it is the oracle's own failure, else nil.
func internal(err error) error {
	if err == nil || IsUnbuildable(err) {
		return nil
	}
	return err
}

func finish(src string, doc bson.D, err error) Doc {
	if err != nil {
		return Doc{Source: src, Err: err}
	}
	b, err := encode(nil, doc)
	if err != nil {
		return Doc{Source: src, Err: reject("", "cannot be encoded as BSON: %v", err)}
	}
	return Doc{Source: src, BSON: b}
}

// readObject reads the JSON of n values as buildObject writes it (an
// array, or an array of arrays of maxValues values past maxValues),
// calling each with every value's index once the reader is at it.
func readObject(r *reader, n int, each func(i int) error) error {
	chunked := n > maxValues
	if chunked {
		if err := r.expect('['); err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		if i%maxValues == 0 {
			if chunked && i > 0 {
				if err := r.expect(','); err != nil {
					return err
				}
			}
			if err := r.expect('['); err != nil {
				return err
			}
		} else if err := r.expect(','); err != nil {
			return err
		}
		if err := each(i); err != nil {
			return err
		}
		if i%maxValues == maxValues-1 || i == n-1 {
			if err := r.expect(']'); err != nil {
				return err
			}
		}
	}
	if n == 0 {
		if err := r.expect('['); err != nil {
			return err
		}
		if err := r.expect(']'); err != nil {
			return err
		}
	}
	if chunked {
		return r.expect(']')
	}
	return nil
}

// readDoc reads the JSON of one (sub)document of shape s.
func readDoc(r *reader, s *docShape) (bson.D, error) {
	doc := make(bson.D, 0, len(s.fields))
	err := readObject(r, len(s.fields), func(i int) error {
		e, keep, err := readField(r, s.fields[i])
		if keep {
			doc = append(doc, e)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// readField reads one field's value; keep is false when the field is left
// out (a NULL value, no embedded row).
func readField(r *reader, f *fieldShape) (bson.E, bool, error) {
	name := f.name
	var pivotVal any
	if f.pivot {
		if err := r.expect('['); err != nil {
			return bson.E{}, false, err
		}
		var err error
		if pivotVal, err = pivotValue(r, f.pivotType, f.path); err != nil {
			return bson.E{}, false, err
		}
		if err := r.expect(','); err != nil {
			return bson.E{}, false, err
		}
	}
	v, err := fieldValue(r, f)
	if err != nil {
		return bson.E{}, false, err
	}
	if f.pivot {
		if err := r.expect(']'); err != nil {
			return bson.E{}, false, err
		}
		if v == nil {
			return bson.E{}, false, nil
		}
		switch x := pivotVal.(type) {
		case error:
			return bson.E{}, false, x
		case string:
			name = x
		}
	}
	if v == nil && !f.docID {
		return bson.E{}, false, nil
	}
	return bson.E{Key: name, Value: v}, true, nil
}

// pivotValue reads a pivot's name value and returns the name it gives, or
// the error that it cannot name a field (returned as the value: it
// matters only when the field's own value is not NULL).
func pivotValue(r *reader, vt valueType, path string) (any, error) {
	if vt.fam == famDate || vt.fam == famTimestamp || vt.fam == famTimestampTZ {
		if r.null() {
			return reject(path, "the field name comes from a NULL value"), nil
		}
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		if s == "infinity" || s == "-infinity" {
			return reject(path, "the field name comes from the value %s, which has no date", s), nil
		}
		c, err := parseCivil(s)
		if err != nil {
			return nil, &badJSON{msg: err.Error()}
		}
		t := time.Date(int(c.year), time.Month(c.month), c.day, c.hour, c.min, c.sec, c.micro*1000, time.UTC).Add(-time.Duration(c.offset) * time.Second)
		return t.Format("2006-01-02T15:04:05.999999999Z07:00"), nil
	}
	v, err := value(r, vt, path)
	if err != nil {
		if IsUnbuildable(err) {
			return err, nil
		}
		return nil, err
	}
	if vt.array {
		return reject(path, "an array cannot name a field"), nil
	}
	name, err := pivotName(v, path)
	if err != nil {
		return err, nil
	}
	return name, nil
}

// fieldValue reads the value of field f: nil when it is left out.
func fieldValue(r *reader, f *fieldShape) (any, error) {
	switch f.kind {
	case fColumn:
		return value(r, f.vt, f.path)
	case fConst:
		if err := r.skip(); err != nil {
			return nil, err
		}
		return f.konst, nil
	case fPrefixID:
		if r.null() {
			return nil, reject(f.path, "a key value is NULL")
		}
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		return f.prefix + s, nil
	case fObject:
		if r.null() {
			return nil, nil
		}
		return readDoc(r, f.sub)
	case fArray, fIdDocs:
		if err := r.expect('['); err != nil {
			return nil, err
		}
		return r.elements(func(int) (any, error) { return readDoc(r, f.sub) })
	case fIds:
		if err := r.expect('['); err != nil {
			return nil, err
		}
		return r.elements(func(i int) (any, error) { return value(r, f.vt, fmt.Sprintf("%s.%d", f.path, i)) })
	case fAggregate:
		v, err := value(r, f.vt, f.path)
		if err != nil || v != nil {
			return v, err
		}
		return f.zero, nil
	case fExpr:
		return exprField(r, f)
	}
	return nil, fmt.Errorf("oracle: field %s of an unknown kind", f.path)
}

// exprField reads an expression's inputs, runs it and converts its result.
func exprField(r *reader, f *fieldShape) (any, error) {
	env := make(map[string]any, len(f.env))
	// A value that cannot be read rejects the row whichever input it is
	// (as migrate: an expression never sees one).
	err := readObject(r, len(f.env), func(i int) error {
		v := f.env[i]
		x, err := envInput(r, v, f.path+": "+v.name)
		env[v.name] = x
		return err
	})
	if err != nil {
		return nil, err
	}
	out, err := mappings.RunExpr(f.prog, env)
	if err != nil {
		return nil, reject(f.path, "expr %q: %v", f.source, err)
	}
	v, err := exprResult(out)
	if err != nil {
		return nil, reject(f.path, "expr %q: %v", f.source, err)
	}
	return v, nil
}

// envInput reads one expression input: a column's value as expressions
// see it, or a lookup's row as a map of its columns (nil: no row).
func envInput(r *reader, v envVar, path string) (any, error) {
	if !v.lookup {
		return exprInput(r, v.vt, path)
	}
	if r.null() {
		return nil, nil
	}
	m := make(map[string]any, len(v.cols))
	err := readObject(r, len(v.cols), func(i int) error {
		c := v.cols[i]
		x, err := exprInput(r, c.vt, path+"."+c.name)
		m[c.name] = x
		return err
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// exprInput is a value as expressions see it (the README: NUMERIC as a
// double, which rejects the row when no double holds it; a uuid as its
// text, binary as bytes, dates as times with their microseconds whatever
// the column's timestamp mode, JSON as maps and lists, NULL as nil), from
// its BSON value.
func exprInput(r *reader, vt valueType, path string) (any, error) {
	// timestamp: string is how a field writes its timestamps, not how an
	// expression sees them: times, also in arrays
	vt.timeText = false
	if vt.fam == famNumeric && !vt.array {
		if r.null() {
			return nil, nil
		}
		s, _, err := r.scalarText()
		if err != nil {
			return nil, err
		}
		return numberForExpr(s, path)
	}
	if (vt.fam == famDate || vt.fam == famTimestamp || vt.fam == famTimestampTZ) && !vt.array {
		if r.null() {
			return nil, nil
		}
		s, err := r.str()
		if err != nil {
			return nil, err
		}
		if s == "infinity" || s == "-infinity" {
			return nil, reject(path, "the %s value %s cannot be read: it has no date", vt.desc, s)
		}
		c, err := parseCivil(s)
		if err != nil {
			return nil, &badJSON{msg: err.Error()}
		}
		return time.Date(int(c.year), time.Month(c.month), c.day, c.hour, c.min, c.sec, c.micro*1000, time.UTC).Add(-time.Duration(c.offset) * time.Second), nil
	}
	v, err := value(r, vt, path)
	if err != nil {
		return nil, err
	}
	return exprForm(v, path)
}

// numberForExpr is a decimal's double for an expression: the nearest
// double; beyond a double's range, or non-zero with 0 as its nearest
// double, the row is rejected.
func numberForExpr(s, path string) (any, error) {
	switch s {
	case "NaN":
		return quietNaN, nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case math.IsInf(f, 0):
		return nil, reject(path, "the number %s is out of range for a double, which expressions see numbers as", short(s))
	case err != nil:
		return nil, reject(path, "the number %s cannot be read as a double: %v", short(s), err)
	case f == 0 && nonZero(s):
		return nil, reject(path, "the number %s is too small for a double, which expressions see numbers as", short(s))
	}
	return f, nil
}

// exprForm turns a BSON value into what expressions see.
func exprForm(v any, path string) (any, error) {
	switch x := v.(type) {
	case bson.Decimal128:
		return numberForExpr(x.String(), path)
	case bson.Binary:
		if x.Subtype == bson.TypeBinaryUUID {
			h := fmt.Sprintf("%x", x.Data)
			return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32], nil
		}
		return []byte(x.Data), nil
	case bson.DateTime:
		return x.Time().UTC(), nil
	case bson.D:
		m := make(map[string]any, len(x))
		for _, e := range x {
			c, err := exprForm(e.Value, path+"."+e.Key)
			if err != nil {
				return nil, err
			}
			m[e.Key] = c
		}
		return m, nil
	case bson.A:
		l := make([]any, len(x))
		for i, e := range x {
			c, err := exprForm(e, fmt.Sprintf("%s.%d", path, i))
			if err != nil {
				return nil, err
			}
			l[i] = c
		}
		return l, nil
	}
	return v, nil
}

// exprResult is the BSON value of an expression's result: an int as an
// int32 when it fits (else an int64), an int64 as itself, maps as
// documents with their keys sorted, lists as arrays; nil is left out.
func exprResult(v any) (any, error) {
	switch x := v.(type) {
	case float64:
		if x != x {
			return quietNaN, nil
		}
		return x, nil
	case nil, string, bool, int32, int64:
		return x, nil
	case int:
		if x >= math.MinInt32 && x <= math.MaxInt32 {
			return int32(x), nil
		}
		return int64(x), nil
	case int8:
		return int32(x), nil
	case int16:
		return int32(x), nil
	case uint8:
		return int32(x), nil
	case uint16:
		return int32(x), nil
	case uint32:
		if x <= math.MaxInt32 {
			return int32(x), nil
		}
		return int64(x), nil
	case uint:
		if uint64(x) > math.MaxInt64 {
			return nil, fmt.Errorf("the result %d does not fit a 64-bit integer", x)
		}
		return exprResult(int(x))
	case uint64:
		if x > math.MaxInt64 {
			return nil, fmt.Errorf("the result %d does not fit a 64-bit integer", x)
		}
		return exprResult(int(x))
	case float32:
		return exprResult(float64(x))
	case time.Time:
		return bson.NewDateTimeFromTime(x), nil
	case []byte:
		return bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: x}, nil
	case []string:
		a := make(bson.A, len(x))
		for i, s := range x {
			a[i] = s
		}
		return a, nil
	case []any:
		a := make(bson.A, len(x))
		for i, e := range x {
			c, err := exprResult(e)
			if err != nil {
				return nil, err
			}
			a[i] = c
		}
		return a, nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		d := make(bson.D, 0, len(x))
		for _, k := range keys {
			c, err := exprResult(x[k])
			if err != nil {
				return nil, err
			}
			d = append(d, bson.E{Key: k, Value: c})
		}
		return d, nil
	}
	return nil, fmt.Errorf("a result of this kind (%s) cannot be stored in a document", strings.TrimPrefix(fmt.Sprintf("%T", v), "*"))
}

// bucketRow takes one item row of a bucket collection.
func (d *Documents) bucketRow(src string, cols [][]byte) ([]Doc, error) {
	b := d.q.bucket
	if cols[1] == nil {
		return []Doc{{Source: src, Err: reject("", "bucket parent key: a value is NULL")}}, nil
	}
	pkey := string(cols[1])
	var out []Doc
	if !d.inParent || pkey != d.pkey {
		// The parent's values, from its first row.
		parent, err := readParent(&reader{b: cols[2]}, b.by)
		if err != nil {
			if !IsUnbuildable(err) {
				return nil, err
			}
			return []Doc{{Source: src, Err: err}}, nil
		}
		out = append(out, d.endParent()...)
		d.pkey, d.inParent, d.parent, d.page = pkey, true, parent, 0
	}
	item, err := readDoc(&reader{b: cols[3]}, d.q.doc)
	if err != nil {
		if !IsUnbuildable(err) {
			return nil, err
		}
		return append(out, Doc{Source: src, Err: err}), nil
	}
	if b.skipLast > 0 {
		d.held = append(d.held, item)
		if len(d.held) <= b.skipLast {
			return out, nil
		}
		item = d.held[0]
		d.held = d.held[1:]
	}
	d.items = append(d.items, item)
	if len(d.items) == b.size {
		out = append(out, d.emit())
	}
	return out, nil
}

func readParent(r *reader, by []*fieldShape) ([]any, error) {
	if err := r.expect('['); err != nil {
		return nil, err
	}
	vals := make([]any, len(by))
	for i, f := range by {
		if i > 0 {
			if err := r.expect(','); err != nil {
				return nil, err
			}
		}
		v, err := value(r, f.vt, f.path)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, r.expect(']')
}

// Flush returns the last parent's last page: call it once after the last
// row.
func (d *Documents) Flush() []Doc {
	if d.q.bucket == nil {
		return nil
	}
	out := d.endParent()
	d.inParent = false
	return out
}

func (d *Documents) endParent() []Doc {
	d.held = d.held[:0]
	if len(d.items) == 0 {
		return nil
	}
	return []Doc{d.emit()}
}

func (d *Documents) emit() Doc {
	b := d.q.bucket
	id := fmt.Sprintf("%s-%d", d.pkey, d.page)
	doc := bson.D{{Key: "_id", Value: id}}
	for i, f := range b.by {
		doc = append(doc, bson.E{Key: f.name, Value: d.parent[i]})
	}
	doc = append(doc, bson.E{Key: b.page, Value: int32(d.page)}, bson.E{Key: b.items, Value: d.items})
	names := make([]string, len(b.by))
	for i, c := range d.q.Entry.Bucket.By {
		names[i] = d.q.Entry.Root.Columns[c].Name
	}
	src := fmt.Sprintf("%s (%s)=(%s) page %d", d.q.Entry.Root.Table.Name, strings.Join(names, ", "), d.pkey, d.page)
	d.page++
	d.items = nil
	return finish(src, doc, checkNames(doc, "", 1))
}
