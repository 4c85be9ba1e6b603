package load

// Verify's view of stored documents: the BSON-level work of comparing what
// a target holds with what the source gives (_id sort keys, field
// differences, reference paths), kept here so that only this package reads
// BSON with the driver. pipeline's verify does the rest (sorting, merging,
// counting).

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/transform"
)

// Value is one value of a stored document: its BSON type byte and its
// encoded bytes (what verify keeps of an _id or a reference).
type Value struct {
	Type byte
	Data []byte
}

func (v Value) raw() bson.RawValue { return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data} }

func valueOf(r bson.RawValue) Value { return Value{Type: byte(r.Type), Data: r.Value} }

// DocumentID returns the _id of doc (BSON). The value shares doc's memory.
func DocumentID(doc []byte) (Value, error) {
	idv, err := bson.Raw(doc).LookupErr("_id")
	if err != nil {
		return Value{}, fmt.Errorf("a document without _id (%s)", DocumentText(doc))
	}
	return valueOf(idv), nil
}

// StringField returns the string held by doc's top-level field key.
func StringField(doc []byte, key string) (string, bool) {
	v, err := bson.Raw(doc).LookupErr(key)
	if err != nil {
		return "", false
	}
	return v.StringValueOK()
}

// AppendKey appends v in a canonical form for sorting and comparing _ids:
// numbers of any BSON type that hold an integer compare by value, as
// MongoDB's unique _id index compares them; other values by type and
// bytes.
func AppendKey(dst []byte, v Value) []byte {
	if n, ok := integral(v.raw()); ok {
		dst = append(dst, 'n')
		return binary.BigEndian.AppendUint64(dst, uint64(n)^(1<<63))
	}
	dst = append(dst, v.Type)
	return append(dst, v.Data...)
}

// KeyJSON renders a key made by AppendKey as relaxed Extended JSON.
func KeyJSON(k []byte) json.RawMessage {
	if len(k) == 9 && k[0] == 'n' {
		n := int64(binary.BigEndian.Uint64(k[1:]) ^ (1 << 63))
		return json.RawMessage(strconv.FormatInt(n, 10))
	}
	if len(k) == 0 {
		return json.RawMessage(`null`)
	}
	return Value{Type: k[0], Data: k[1:]}.JSON()
}

// integral returns a number's value when it is an integer.
func integral(v bson.RawValue) (int64, bool) {
	switch v.Type {
	case bson.TypeInt32:
		if x, ok := v.Int32OK(); ok {
			return int64(x), true
		}
	case bson.TypeInt64:
		if x, ok := v.Int64OK(); ok {
			return x, true
		}
	case bson.TypeDouble:
		if x, ok := v.DoubleOK(); ok && x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x), true
		}
	}
	return 0, false
}

// JSON renders v as relaxed Extended JSON; values over 1 KiB are
// abbreviated to a JSON string saying so.
func (v Value) JSON() json.RawMessage { return valueJSON(v.raw()) }

func valueJSON(v bson.RawValue) json.RawMessage {
	b, err := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, false, false)
	if err != nil || len(b) < 6 {
		return json.RawMessage(strconv.Quote(v.String()))
	}
	b = b[5 : len(b)-1]
	if len(b) > 1024 {
		s := fmt.Sprintf("(%d bytes of JSON) %s...", len(b), b[:200])
		q, _ := json.Marshal(s)
		return q
	}
	return json.RawMessage(b)
}

// DocumentText renders doc for messages: Extended JSON, cut after 200
// characters.
func DocumentText(doc []byte) string {
	s := bson.Raw(doc).String()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// typeName names a BSON type the way users know it.
func typeName(t bson.Type) string {
	switch t {
	case bson.TypeInt32:
		return "int32"
	case bson.TypeInt64:
		return "int64"
	case bson.TypeDouble:
		return "double"
	case bson.TypeString:
		return "string"
	case bson.TypeBoolean:
		return "bool"
	case bson.TypeDateTime:
		return "date"
	case bson.TypeDecimal128:
		return "decimal"
	case bson.TypeEmbeddedDocument:
		return "object"
	case bson.TypeArray:
		return "array"
	case bson.TypeNull:
		return "null"
	case bson.TypeBinary:
		return "binData"
	case bson.TypeObjectID:
		return "objectId"
	}
	return t.String()
}

// WalkPath calls fn with every value at the key path steps below doc,
// walking into arrays on the way (their indexes join the path fn gets); a
// value that is itself an array gives each item. Null values are skipped.
func WalkPath(doc []byte, steps []string, fn func(path []string, v Value)) {
	walkPath(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: doc}, steps, nil, fn)
}

func walkPath(v bson.RawValue, steps []string, at []string, fn func([]string, Value)) {
	if v.Type == bson.TypeArray {
		vals, err := v.Array().Values()
		if err != nil {
			return
		}
		for i, x := range vals {
			walkPath(x, steps, append(slices.Clip(at), strconv.Itoa(i)), fn)
		}
		return
	}
	if len(steps) == 0 {
		if v.Type != bson.TypeNull && v.Type != bson.TypeUndefined {
			fn(at, valueOf(v))
		}
		return
	}
	if v.Type != bson.TypeEmbeddedDocument {
		return
	}
	x, err := v.Document().LookupErr(steps[0])
	if err != nil {
		return
	}
	walkPath(x, steps[1:], append(slices.Clip(at), steps[0]), fn)
}

// FieldIs reports whether doc's top-level field key holds value (a
// document value, encoded as AppendDocument encodes it; numbers holding
// an integer compare by value): a stored document of a shared
// collection's given type.
func FieldIs(doc []byte, key string, value any) bool {
	got, err := bson.Raw(doc).LookupErr(key)
	if err != nil {
		return false
	}
	want, err := AppendDocument(nil, transform.Doc{{Key: key, Value: value}})
	if err != nil {
		return false
	}
	w := bson.Raw(want).Lookup(key)
	if a, ok := integral(got); ok {
		b, ok := integral(w)
		return ok && a == b
	}
	return got.Type == w.Type && bytes.Equal(got.Value, w.Value)
}

// IsTombstone reports whether doc's top-level field key holds a date:
// a document sync kept as a tombstone (the mapping's onDelete:
// {tombstone: key}).
func IsTombstone(doc []byte, key string) bool {
	v, err := bson.Raw(doc).LookupErr(key)
	return err == nil && v.Type == bson.TypeDateTime
}
