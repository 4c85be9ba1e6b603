// Package poison makes memory that is reused fail loudly in test builds.
//
// Some memory is handed out with documents and taken back for the next
// batch (a transform.Slab, a read buffer): whoever keeps a value past the
// point where the memory is reclaimed reads the next batch's values, or
// half of them. Built with the denorm_poison tag (make test-poison), the
// code that reclaims such memory overwrites it with a recognisable
// garbage pattern (Byte, Key, Value) and does not hand it out again, so a
// value kept too long stays visibly wrong, refused by the encoders and
// caught by the tests, instead of quietly becoming another document. In ordinary builds On is false and every
// function here compiles to nothing.
package poison

// Byte is the pattern reused bytes are filled with.
const Byte = 0xDB

// Key is the field name reused document fields get: a NUL makes it a name
// no document may have (transform.CheckKeys refuses it).
const Key = "\x00poisoned: this memory was reused after its batch"

// Marker is the type of Value.
type Marker struct{}

// Value is the value reused interface slots (fields, array items) get: no
// encoder knows its type.
var Value any = Marker{}

// Is reports whether v is Value.
func Is(v any) bool {
	_, ok := v.(Marker)
	return ok
}

// Bytes fills b with Byte when On.
func Bytes(b []byte) {
	if On {
		for i := range b {
			b[i] = Byte
		}
	}
}

// Reuse is what may be reused of b, a buffer whose user is done with it:
// b in ordinary builds; under denorm_poison nothing (nil), and b is
// poisoned up to its capacity, so whoever kept it reads garbage for good
// instead of a later value written over it.
func Reuse(b []byte) []byte {
	if On {
		Bytes(b[:cap(b)])
		return nil
	}
	return b
}

// Fill sets every element of s to v when On.
func Fill[T any](s []T, v T) {
	if On {
		for i := range s {
			s[i] = v
		}
	}
}
