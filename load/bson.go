package load

// BSON encoding of document values (see transform), without reflection:
//
//	nil                BSON null
//	int32, int64       int32, int64
//	float64            double (±Inf kept; every NaN written as the quiet NaN
//	                   0x7ff8000000000000, PostgreSQL's, so that equal documents
//	                   are equal bytes whatever NaN a conversion made)
//	string             string
//	bool               boolean
//	time.Time          UTC datetime, milliseconds since the epoch (sub-millisecond
//	                   digits are dropped, rounding toward the past)
//	transform.Decimal  Decimal128 parsed from the text; an error when the text
//	                   does not fit (more than 34 significant digits, exponent
//	                   out of range) or is not a number
//	transform.UUID     binary subtype 4
//	transform.Binary   binary subtype 0
//	transform.Doc      embedded document, keys in order
//	transform.Array    array
//	Value              the stored BSON value as is (an _id read back)
//
// Anything else is an error naming the value's key path ("a.b.2").
// DecodeDocument reads such a document back into these values.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/denorm/denorm/transform"
)

// QuietNaN is the one NaN denorm writes (bits 0x7ff8000000000000): a real
// NaN widened to a double, a NaN an expression computed and PostgreSQL's
// float8 NaN all become it.
var QuietNaN = math.Float64frombits(0x7ff8000000000000)

// AppendDocument appends the BSON encoding of d to dst.
func AppendDocument(dst []byte, d transform.Doc) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst, err := appendFields(dst, d)
	if err != nil {
		return dst, fieldErr(err)
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}

// EncodeDocument returns the BSON encoding of d.
func EncodeDocument(d transform.Doc) (bson.Raw, error) {
	b, err := AppendDocument(nil, d)
	if err != nil {
		return nil, err
	}
	return bson.Raw(b), nil
}

// keyPath is the chain of keys to the value being encoded, built only for
// error messages.
type keyPath struct {
	parent *keyPath
	key    string
}

func (p *keyPath) String() string {
	if p == nil {
		return ""
	}
	var keys []string
	for q := p; q != nil; q = q.parent {
		keys = append(keys, q.key)
	}
	for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
		keys[i], keys[j] = keys[j], keys[i]
	}
	return strings.Join(keys, ".")
}

// appendFields appends d's fields. Errors are *pathError, the keys to
// the value gathered as they travel up (nothing is allocated to track
// the path on the way down).
func appendFields(dst []byte, d transform.Doc) ([]byte, error) {
	var err error
	for i := range d {
		f := &d[i]
		// Not the field-name rule (mappings.FieldNameFaults, which the
		// writers check first with transform.CheckKeys): the encoding's own
		// limit, as a BSON key ends at a NUL, for any document encoded.
		if strings.IndexByte(f.Key, 0) >= 0 {
			return dst, &pathError{keys: []string{f.Key}, msg: "a BSON key cannot contain a NUL character"}
		}
		dst, err = appendValue(dst, f.Key, f.Value)
		if err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// Array keys "0".."99" without allocating.
var indexKeys = func() [100]string {
	var k [100]string
	for i := range k {
		k[i] = strconv.Itoa(i)
	}
	return k
}()

func indexKey(i int) string {
	if i < len(indexKeys) {
		return indexKeys[i]
	}
	return strconv.Itoa(i)
}

func appendValue(dst []byte, key string, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return bsoncore.AppendNullElement(dst, key), nil
	case string:
		return bsoncore.AppendStringElement(dst, key, x), nil
	case int32:
		return bsoncore.AppendInt32Element(dst, key, x), nil
	case int64:
		return bsoncore.AppendInt64Element(dst, key, x), nil
	case float64:
		if x != x {
			x = QuietNaN
		}
		return bsoncore.AppendDoubleElement(dst, key, x), nil
	case bool:
		return bsoncore.AppendBooleanElement(dst, key, x), nil
	case time.Time:
		return bsoncore.AppendDateTimeElement(dst, key, x.UnixMilli()), nil
	case transform.Decimal:
		d, err := parseDecimal(string(x))
		if err != nil {
			return dst, decimalError(key, x)
		}
		hi, lo := d.GetBytes()
		return bsoncore.AppendDecimal128Element(dst, key, hi, lo), nil
	case transform.UUID:
		return bsoncore.AppendBinaryElement(dst, key, bson.TypeBinaryUUID, x[:]), nil
	case transform.Binary:
		return bsoncore.AppendBinaryElement(dst, key, bson.TypeBinaryGeneric, x), nil
	case transform.Doc:
		idx, b := bsoncore.AppendDocumentElementStart(dst, key)
		b, err := appendFields(b, x)
		if err != nil {
			return b, under(key, err)
		}
		return bsoncore.AppendDocumentEnd(b, idx)
	case Value:
		// A value read back from a target (an _id to delete), as stored.
		return bsoncore.AppendValueElement(dst, key, bsoncore.Value{Type: bsoncore.Type(x.Type), Data: x.Data}), nil
	case transform.Array:
		idx, b := bsoncore.AppendArrayElementStart(dst, key)
		var err error
		for i, e := range x {
			b, err = appendValue(b, indexKey(i), e)
			if err != nil {
				return b, under(key, err)
			}
		}
		return bsoncore.AppendArrayEnd(b, idx)
	}
	return dst, unsupportedError(key, v)
}

func decimalAbbrev(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%s...%s (%d characters)", s[:28], s[len(s)-28:], len(s))
	}
	return s
}

// DecodeDocument turns a BSON document made by AppendDocument back into
// document values, so that AppendDocument of the result gives the same
// bytes (a directory target writes a document given as Raw so). Types AppendDocument never
// writes (ObjectId, regular expressions, binary subtypes other than 0 and
// 4, ...) are an error naming the field.
func DecodeDocument(doc []byte) (transform.Doc, error) {
	return decodeDoc(bsoncore.Document(doc), nil)
}

// LookupValue decodes one top-level field of a BSON document made by
// AppendDocument (as DecodeDocument does): sync's diff pass writes the
// bytes it compared and reads only their _id (and type) back.
func LookupValue(doc []byte, key string) (any, error) {
	v, err := bsoncore.Document(doc).LookupErr(key)
	if err != nil {
		return nil, fmt.Errorf("field %q: %w", key, err)
	}
	return decodeValue(v, &keyPath{nil, key})
}

// RawDocument is a document of coll to write as raw, BSON made by
// AppendDocument (sync's diff pass and verify --repair write the bytes
// they compared): its _id and, in a shared collection (discriminator key
// disc), its type are read from the bytes; the fields are not decoded.
func RawDocument(coll string, raw []byte, source, disc string) (transform.Document, error) {
	id, err := LookupValue(raw, "_id")
	if err != nil {
		return transform.Document{}, fmt.Errorf("collection %q: read back a built document: %w", coll, err)
	}
	d := transform.Document{Collection: coll, ID: id, Raw: raw, Source: source}
	if disc != "" {
		v, err := LookupValue(raw, disc)
		if err != nil {
			return transform.Document{}, fmt.Errorf("collection %q: read back a built document: %w", coll, err)
		}
		d.Discriminator = &transform.Field{Key: disc, Value: v}
	}
	return d, nil
}

func decodeDoc(doc bsoncore.Document, parent *keyPath) (transform.Doc, error) {
	elems, err := doc.Elements()
	if err != nil {
		return nil, fmt.Errorf("decode document %s: %w", parent.String(), err)
	}
	out := make(transform.Doc, len(elems))
	for i, e := range elems {
		v, err := decodeValue(e.Value(), &keyPath{parent, e.Key()})
		if err != nil {
			return nil, err
		}
		out[i] = transform.Field{Key: e.Key(), Value: v}
	}
	return out, nil
}

func decodeValue(v bsoncore.Value, at *keyPath) (any, error) {
	switch v.Type {
	case bsoncore.TypeNull:
		return nil, nil
	case bsoncore.TypeString:
		return v.StringValue(), nil
	case bsoncore.TypeInt32:
		return v.Int32(), nil
	case bsoncore.TypeInt64:
		return v.Int64(), nil
	case bsoncore.TypeDouble:
		return v.Double(), nil
	case bsoncore.TypeBoolean:
		return v.Boolean(), nil
	case bsoncore.TypeDateTime:
		return time.UnixMilli(v.DateTime()).UTC(), nil
	case bsoncore.TypeDecimal128:
		hi, lo := v.Decimal128()
		return transform.Decimal(bson.NewDecimal128(hi, lo).String()), nil
	case bsoncore.TypeBinary:
		sub, b := v.Binary()
		switch {
		case sub == bson.TypeBinaryUUID && len(b) == 16:
			var u transform.UUID
			copy(u[:], b)
			return u, nil
		case sub == bson.TypeBinaryGeneric:
			return transform.Binary(append([]byte(nil), b...)), nil
		}
	case bsoncore.TypeEmbeddedDocument:
		return decodeDoc(v.Document(), at)
	case bsoncore.TypeArray:
		vals, err := v.Array().Values()
		if err != nil {
			return nil, fmt.Errorf("decode array %s: %w", at.String(), err)
		}
		out := make(transform.Array, len(vals))
		for i, x := range vals {
			if out[i], err = decodeValue(x, &keyPath{at, indexKey(i)}); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("field %q: BSON type %s is not a document value denorm writes", at.String(), v.Type)
}
