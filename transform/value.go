package transform

// The document model. Documents are ordered: key order is part of the output
// (MongoDB compares documents field by field, and users read them in order).
//
// A document value is one of:
//
//	nil                 BSON null (only inside arrays or JSON; NULL columns are left out)
//	int32, int64        BSON int32 / int64
//	float64             BSON double (NaN and ±Inf kept)
//	string              BSON string
//	bool                BSON boolean
//	time.Time           BSON date (milliseconds since the epoch, UTC)
//	Decimal             BSON Decimal128, from the exact decimal text
//	UUID                BSON binary subtype 4
//	Binary              BSON binary subtype 0
//	Doc                 embedded document
//	Array               array
//
// Converters in extract produce only these types; targets in load encode only
// these types and report anything else as an error.

import "fmt"

// Field is one key/value pair of a document.
type Field struct {
	Key   string
	Value any
}

// Doc is an ordered document.
type Doc []Field

// Get returns the value of key and whether it is present.
func (d Doc) Get(key string) (any, bool) {
	for _, f := range d {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

// Array is a BSON array.
type Array []any

// Decimal is an exact decimal number in its canonical text form ("12.50",
// "-3", "1E+3", "NaN", "Infinity", "-Infinity"), kept as text so that no
// precision is lost between PostgreSQL NUMERIC and BSON Decimal128.
type Decimal string

// UUID is a 16-byte UUID, written as BSON binary subtype 4.
type UUID [16]byte

// Binary is opaque bytes, written as BSON binary subtype 0.
type Binary []byte

// Document is one target document with where it came from.
type Document struct {
	Collection string
	// ID is the value of _id, also the first field of Body.
	ID any
	// Body holds every field, _id first.
	Body Doc
	// Source names the source row, for error messages: `person (id)=(42)`.
	Source string
	// Page is a bucket page's parent and number; nil for other documents.
	Page *PagerState
	// Discriminator is set for the document types of a shared collection:
	// writes replace only a document of the same type.
	Discriminator *Field
	// Raw, when set, is the document already encoded as BSON, its keys
	// checked (CheckKeys): a server target writes these bytes as they
	// are, and Body may be nil. Sync's diff pass writes the bytes it
	// compared.
	Raw []byte
}

// Reject is a source row (or bucket page) that did not reach the target:
// its document could not be built (Build, Pager.Add), or the target
// refused it (load.Target.Write: over the size limit, refused by the
// server). It is the one record of a rejected row, from the builder to
// the reject file.
type Reject struct {
	Collection string
	// Source names the source row or bucket page: `person (id)=(42)`.
	Source string
	// ID is the document's _id; nil when building the document failed.
	ID  any
	Err error
}

func (r Reject) Error() string {
	return fmt.Sprintf("%s: %s: %v", r.Collection, r.Source, r.Err)
}

func (r Reject) Unwrap() error { return r.Err }
