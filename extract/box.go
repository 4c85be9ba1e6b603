package extract

import (
	"time"
	"unsafe"

	"github.com/denorm/denorm/transform"
)

// Boxing without an allocation per value.
//
// A row's values are interfaces (any), and putting a string, a time or a
// number into an interface allocates a small object for it: about one
// allocation per column per row, which with the garbage collector's work
// for them was the largest cost of reading wide tables. The arena instead
// keeps the values in slices of their type, filled in order, a new slice
// when one is full, and makes each interface point at its element; string
// bytes are copied into shared byte blocks. One allocation serves hundreds
// of values.
//
// The interfaces are ordinary values of their types: the garbage collector
// sees the pointer into the slice and keeps the whole slice alive while
// any of its values is referenced, and nothing writes to an element once
// it is handed out, so values stay immutable as transform requires. The
// one assumption beyond the language is the layout of an interface value
// (a type word and a data pointer), which reflect and the runtime have
// used since Go 1; boxCheck verifies it at start-up for every type boxed
// here and falls back to plain boxing if it ever changed.

// eface is the layout of an interface value with methods-free type any.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

func typeWord(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).typ }

var (
	stringType  = typeWord("")
	decimalType = typeWord(transform.Decimal(""))
	timeType    = typeWord(time.Time{})
	int32Type   = typeWord(int32(0))
	int64Type   = typeWord(int64(0))
	float64Type = typeWord(float64(0))
	uuidType    = typeWord(transform.UUID{})
	binaryType  = typeWord(transform.Binary(nil))
)

// box makes an interface of the type typ whose value is at p.
func box(typ, p unsafe.Pointer) (v any) {
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = typ, p
	return v
}

// boxWorks is false when an interface is not laid out as eface says: the
// arena then boxes values the ordinary way.
var boxWorks = boxCheck()

func boxCheck() bool {
	s, d, tm, i, l, f := "a", transform.Decimal("1.5"), time.Unix(1, 2).UTC(), int32(300), int64(1<<40), 2.5
	u, b := transform.UUID{1, 2, 3}, transform.Binary{4, 5}
	checks := []struct{ got, want any }{
		{box(stringType, unsafe.Pointer(&s)), s},
		{box(decimalType, unsafe.Pointer(&d)), d},
		{box(timeType, unsafe.Pointer(&tm)), tm},
		{box(int32Type, unsafe.Pointer(&i)), i},
		{box(int64Type, unsafe.Pointer(&l)), l},
		{box(float64Type, unsafe.Pointer(&f)), f},
		{box(uuidType, unsafe.Pointer(&u)), u},
	}
	for _, c := range checks {
		if c.got != c.want {
			return false
		}
	}
	got, ok := box(binaryType, unsafe.Pointer(&b)).(transform.Binary)
	return ok && len(got) == 2 && got[0] == 4 && got[1] == 5
}

// Block sizes: values per typed slice, bytes per byte block, and the
// longest string copied into a shared block (longer ones get their own).
const (
	arenaValues   = 256
	arenaBytes    = 32 << 10
	arenaMaxShare = 2 << 10
)

// arena boxes the values of one decoder. It is used by one goroutine.
type arena struct {
	strs  []string
	decs  []transform.Decimal
	times []time.Time
	i32s  []int32
	i64s  []int64
	f64s  []float64
	uuids []transform.UUID
	bins  []transform.Binary
	bytes []byte
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
	if !boxWorks {
		return string(b)
	}
	p := next(&a.strs)
	*p = a.text(b)
	return box(stringType, unsafe.Pointer(p))
}

func (a *arena) decimal(b []byte) any {
	if !boxWorks {
		return transform.Decimal(b)
	}
	p := next(&a.decs)
	*p = transform.Decimal(a.text(b))
	return box(decimalType, unsafe.Pointer(p))
}

func (a *arena) time(t time.Time) any {
	if !boxWorks {
		return t
	}
	p := next(&a.times)
	*p = t
	return box(timeType, unsafe.Pointer(p))
}

func (a *arena) int32(v int32) any {
	if !boxWorks || v >= 0 && v < 256 {
		return v // small values are boxed without an allocation anyway
	}
	p := next(&a.i32s)
	*p = v
	return box(int32Type, unsafe.Pointer(p))
}

func (a *arena) int64(v int64) any {
	if !boxWorks || v >= 0 && v < 256 {
		return v
	}
	p := next(&a.i64s)
	*p = v
	return box(int64Type, unsafe.Pointer(p))
}

func (a *arena) float64(v float64) any {
	if !boxWorks {
		return v
	}
	p := next(&a.f64s)
	*p = v
	return box(float64Type, unsafe.Pointer(p))
}

func (a *arena) uuid(b []byte) any {
	if !boxWorks {
		return transform.UUID(b)
	}
	p := next(&a.uuids)
	*p = transform.UUID(b)
	return box(uuidType, unsafe.Pointer(p))
}

// binary copies b (the value must not share the wire buffer).
func (a *arena) binary(b []byte) any {
	if !boxWorks || len(b) == 0 || len(b) > arenaMaxShare {
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
	return box(binaryType, unsafe.Pointer(p))
}
