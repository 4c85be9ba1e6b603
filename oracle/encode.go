package oracle

import (
	"fmt"
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// encode appends the BSON of document d, by the oracle's own walk over its
// values (the driver's bsoncore writes each element's bytes); load's
// encoder, which migrate uses, is not on this path.
func encode(dst []byte, d bson.D) ([]byte, error) {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	var err error
	for _, e := range d {
		if dst, err = encodeElement(dst, e.Key, e.Value); err != nil {
			return nil, err
		}
	}
	return bsoncore.AppendDocumentEnd(dst, idx)
}

func encodeElement(dst []byte, key string, v any) ([]byte, error) {
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
		if math.IsNaN(x) {
			x = quietNaN
		}
		return bsoncore.AppendDoubleElement(dst, key, x), nil
	case bool:
		return bsoncore.AppendBooleanElement(dst, key, x), nil
	case bson.DateTime:
		return bsoncore.AppendDateTimeElement(dst, key, int64(x)), nil
	case bson.Decimal128:
		hi, lo := x.GetBytes()
		return bsoncore.AppendDecimal128Element(dst, key, hi, lo), nil
	case bson.Binary:
		return bsoncore.AppendBinaryElement(dst, key, x.Subtype, x.Data), nil
	case bson.D:
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, key)
		return encode(dst, x)
	case bson.A:
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeArray, key)
		idx, out := bsoncore.AppendArrayStart(dst)
		var err error
		for i, e := range x {
			if out, err = encodeElement(out, arrayKey(i), e); err != nil {
				return nil, err
			}
		}
		return bsoncore.AppendArrayEnd(out, idx)
	}
	return nil, fmt.Errorf("oracle: a value of type %T in a document", v)
}

// arrayKeys are the keys of the first array elements.
var arrayKeys = func() []string {
	k := make([]string, 256)
	for i := range k {
		k[i] = fmt.Sprint(i)
	}
	return k
}()

func arrayKey(i int) string {
	if i < len(arrayKeys) {
		return arrayKeys[i]
	}
	return fmt.Sprint(i)
}
