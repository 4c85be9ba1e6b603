package extract

import (
	"sync"
	"time"
	"unsafe"

	"github.com/denorm/denorm/internal/box"
	"github.com/denorm/denorm/transform"
)

// Boxing without an allocation per value (see internal/box): a row's
// values are interfaces, and putting a string, a time or a number into an
// interface allocates a small object for it - about one allocation per
// column per row, which with the garbage collector's work for them was the
// largest cost of reading wide tables. The arena keeps the values in
// slices of their type instead, and copies string bytes into shared byte
// blocks.

var (
	stringType  = box.TypeOf[string]()
	decimalType = box.TypeOf[transform.Decimal]()
	timeType    = box.TypeOf[time.Time]()
	int32Type   = box.TypeOf[int32]()
	int64Type   = box.TypeOf[int64]()
	float64Type = box.TypeOf[float64]()
	uuidType    = box.TypeOf[transform.UUID]()
	binaryType  = box.SliceType[transform.Binary]()
	arrayType   = box.SliceType[transform.Array]()
	docType     = box.SliceType[transform.Doc]()
)

// Block sizes: values per typed slice, bytes per byte block, and the
// longest string copied into a shared block (longer ones get their own).
const (
	arenaValues   = 128
	arenaBytes    = 8 << 10
	arenaMaxShare = 1 << 10
	// arenaItems is the size of a block of array elements; arrays of
	// more than arenaItems/8 get their own.
	arenaItems = 1024
)

// arena boxes the values of one decoder. It is used by one goroutine.
//
// The reuse rule: the arena never takes memory back. When a typed slice or
// a byte block is full, next and text start a new one and let the old one
// go; the garbage collector keeps it while any value in it is referenced.
// So the values it hands out (strings, numbers, times, byte slices) may be
// kept for as long as anyone likes - past their batch, in the value cache,
// in a checkpoint's position - and nothing here is poisoned under
// denorm_poison, since nothing is reused. They are never written after
// they are handed out.
type arena struct {
	strs  []string
	decs  []transform.Decimal
	times []time.Time
	// utcs holds the times in UTC, as plain words (box.TimeWords: not
	// traced by the garbage collector); times the others.
	utcs   []box.TimeWords
	i32s   []int32
	i64s   []int64
	f64s   []float64
	uuids  []transform.UUID
	bins   []transform.Binary
	arrs   []transform.Array
	items  []any
	docs   []transform.Doc
	fields []transform.Field
	bytes  []byte
}

// next returns the next free element of *s, starting a new slice when it
// is full.
func next[T any](s *[]T) *T {
	if len(*s) == cap(*s) {
		*s = make([]T, 0, arenaValues)
	}
	*s = (*s)[:len(*s)+1]
	return &(*s)[len(*s)-1]
}

// carve takes the next n elements of the block *s (a new block of size
// elements when too few are left), capacity n: an append copies them.
func carve[T any](s *[]T, n, size int) []T {
	if cap(*s)-len(*s) < n {
		*s = make([]T, 0, size)
	}
	start := len(*s)
	*s = (*s)[:start+n]
	return (*s)[start : start+n : start+n]
}

// text copies b into a byte block and returns it as a string.
func (a *arena) text(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaMaxShare {
		return string(b)
	}
	if cap(a.bytes)-len(a.bytes) < len(b) {
		a.bytes = make([]byte, 0, arenaBytes)
	}
	start := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	return unsafe.String(&a.bytes[start], len(b))
}

func (a *arena) string(b []byte) any {
	if !box.Works {
		return string(b)
	}
	p := next(&a.strs)
	*p = a.text(b)
	return stringType.At(p)
}

func (a *arena) decimal(b []byte) any {
	if !box.Works {
		return transform.Decimal(b)
	}
	p := next(&a.decs)
	*p = transform.Decimal(a.text(b))
	return decimalType.At(p)
}

func (a *arena) time(t time.Time) any {
	if !box.Works {
		return t
	}
	if w, plain := box.Words(t); plain {
		p := next(&a.utcs)
		*p = w
		return box.AtTime(p)
	}
	p := next(&a.times)
	*p = t
	return timeType.At(p)
}

// utc boxes time.Unix(sec, nsec).UTC() (nsec in [0, 1e9)), its words
// written directly (box.UTCWords).
func (a *arena) utc(sec int64, nsec int32) any {
	if !box.Works {
		return time.Unix(sec, int64(nsec)).UTC()
	}
	p := next(&a.utcs)
	*p = box.UTCWords(sec, nsec)
	return box.AtTime(p)
}

// date boxes the date days after 2000-01-01 (PostgreSQL's epoch) at
// midnight UTC. A date of the table's years is the table's value and costs
// no memory at all; the others go to the arena as times.
func (a *arena) date(days int32) any {
	if days >= dayTableFirst && days < dayTableEnd {
		if t := dayTable(); t != nil {
			return box.AtTime(&t[days-dayTableFirst])
		}
	}
	return a.time(dayTime(days))
}

// dayTime is midnight UTC of the date days after 2000-01-01.
func dayTime(days int32) time.Time {
	return time.Unix(int64(days)*secondsPerDay+y2kUnixSeconds, 0).UTC()
}

// The day table boxes the dates of 1900 to 2099, which are nearly all the
// dates real tables hold: a column of dates in a wide table is millions
// of values, and as times in the arena each is 24 bytes of new memory to
// fault in, zero and collect. The table is 73,049 times in plain words
// (1.7 MiB that the collector does not scan), made when the first date is
// decoded; its times are never written again, so any number of rows and
// decoders may share them.
const (
	dayTableFirst = -36524 // 1900-01-01, in days after 2000-01-01
	dayTableEnd   = 36525  // 2100-01-01
)

// dayTable returns the table, or nil when times cannot be boxed as words.
var dayTable = sync.OnceValue(func() []box.TimeWords {
	if !box.Works {
		return nil
	}
	t := make([]box.TimeWords, dayTableEnd-dayTableFirst)
	for i := range t {
		w, plain := box.Words(dayTime(int32(dayTableFirst + i)))
		if !plain {
			return nil
		}
		t[i] = w
	}
	return t
})

func (a *arena) int32(v int32) any {
	if !box.Works || v >= 0 && v < 256 {
		return v // small values are boxed without an allocation anyway
	}
	p := next(&a.i32s)
	*p = v
	return int32Type.At(p)
}

func (a *arena) int64(v int64) any {
	if !box.Works || v >= 0 && v < 256 {
		return v
	}
	p := next(&a.i64s)
	*p = v
	return int64Type.At(p)
}

func (a *arena) float64(v float64) any {
	if !box.Works {
		return v
	}
	p := next(&a.f64s)
	*p = v
	return float64Type.At(p)
}

func (a *arena) uuid(b []byte) any {
	if !box.Works {
		return transform.UUID(b)
	}
	p := next(&a.uuids)
	*p = transform.UUID(b)
	return uuidType.At(p)
}

// binary copies b (the value must not share the wire buffer).
func (a *arena) binary(b []byte) any {
	if !box.Works || len(b) == 0 || len(b) > arenaMaxShare {
		c := make(transform.Binary, len(b))
		copy(c, b)
		return c
	}
	p := next(&a.bins)
	if cap(a.bytes)-len(a.bytes) < len(b) {
		a.bytes = make([]byte, 0, arenaBytes)
	}
	start := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	*p = transform.Binary(a.bytes[start:len(a.bytes):len(a.bytes)])
	return binaryType.At(p)
}

// array returns an array of n elements (all nil) to fill before boxArray
// boxes it. Its capacity is n: an append copies it.
func (a *arena) array(n int) transform.Array {
	if !box.Works || n == 0 || n > arenaItems/8 {
		return make(transform.Array, n)
	}
	return carve(&a.items, n, arenaItems)
}

// boxArray boxes an array (from array, filled).
func (a *arena) boxArray(v transform.Array) any {
	if !box.Works {
		return v
	}
	p := next(&a.arrs)
	*p = v
	return arrayType.At(p)
}

// doc returns a document of n fields (all zero) to fill before boxDoc
// boxes it. Its capacity is n: an append copies it.
func (a *arena) doc(n int) transform.Doc {
	if !box.Works || n == 0 || n > arenaItems/8 {
		return make(transform.Doc, n)
	}
	return carve(&a.fields, n, arenaItems/2)
}

// boxDoc boxes a document (from doc, filled).
func (a *arena) boxDoc(v transform.Doc) any {
	if !box.Works {
		return v
	}
	p := next(&a.docs)
	*p = v
	return docType.At(p)
}
