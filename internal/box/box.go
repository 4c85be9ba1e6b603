// Package box puts values into interfaces without an allocation per value.
//
// Storing a string, a time, a number or a slice in an interface (any)
// allocates a small object to hold it. Code that makes many such values
// in one go (a row's columns, a batch's documents) can instead keep the
// values in slices of their type, filled in order, and make each
// interface point at its element with Type.At: one allocation serves
// hundreds of values. The interfaces are ordinary values of their types:
// the garbage collector sees the pointer into the slice and keeps the whole
// slice alive while any of them is referenced. The element must not be
// written once it is boxed: values stay immutable.
//
// Only the types whose interface holds a pointer to the value can be boxed
// so: strings, 32- and 64-bit numbers, 16-byte arrays, time.Time and
// slices (Scalar, and SliceType). A pointer-shaped type (a pointer, map,
// channel or function, or a struct or array of one of them) is stored in
// the interface itself, not behind a pointer: boxing one by its address
// would make an interface holding the address instead of the value. Such
// types do not satisfy the constraints, so they do not compile
// (TestPointerShapedRefused).
//
// The one assumption beyond the language is the layout of an interface
// value (a type word and a data pointer), which reflect and the runtime
// have used since Go 1. Works verifies it at start-up; when it is false,
// callers box values the ordinary way.
package box

import (
	"time"
	"unsafe"
)

// Scalar is the types other than slices that Type.At boxes: none is
// pointer-shaped. time.Time is listed by name: a struct type in general
// may be (a struct of one pointer).
type Scalar interface {
	~string | ~int32 | ~int64 | ~float64 | ~[16]byte | time.Time
}

// Type is the type word of the interfaces of dynamic type T that At
// makes. It is made only by TypeOf and SliceType, so only for the types
// they accept.
type Type[T any] struct{ word unsafe.Pointer }

// TypeOf is the type word of T. It allocates: call it once per type (at
// start-up), not per value.
func TypeOf[T Scalar]() Type[T] { return typeWord[T]() }

// SliceType is the type word of a slice type S.
func SliceType[S ~[]E, E any]() Type[S] { return typeWord[S]() }

func typeWord[T any]() Type[T] {
	var v any = *new(T)
	return Type[T]{(*eface)(unsafe.Pointer(&v)).typ}
}

// At makes an interface of type T whose value is *p, which must never be
// written again. The interface holds p: *p is not copied.
func (t Type[T]) At(p *T) (v any) {
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = t.word, unsafe.Pointer(p)
	return v
}

// eface is the layout of an interface value of type any.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// DataOf is the data word of v: two interfaces holding the same boxed
// value have the same one.
func DataOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).data }

// TimeWords is a time.Time's memory as plain words. A time in UTC (what
// t.UTC() returns, and what the source's dates and timestamps decode to)
// has a nil location pointer, so its words hold no pointer: a slice of
// TimeWords is memory the garbage collector does not trace, where a slice
// of time.Time is traced, as memory that may hold pointers, at every
// collection.
type TimeWords [3]uint64

// Words returns t's words, and false when t has a location pointer (a
// time in a location other than UTC): such a time must be kept in a
// time.Time, where the collector sees its location.
func Words(t time.Time) (TimeWords, bool) {
	w := *(*TimeWords)(unsafe.Pointer(&t))
	return w, w[2] == 0
}

// unixToInternal is what time.Time's seconds count before the Unix epoch
// (they start at January 1 of year 1).
const unixToInternal = (1969*365 + 1969/4 - 1969/100 + 1969/400) * 86400

// UTCWords returns the words of time.Unix(sec, nsec).UTC() (nsec in
// [0, 1e9)) without making the time: a time without a monotonic reading
// keeps its nanoseconds in the first word and its seconds since year 1 in
// the second. Valid only when Works (check compares it with time.Unix).
func UTCWords(sec int64, nsec int32) TimeWords {
	return TimeWords{uint64(nsec), uint64(sec + unixToInternal), 0}
}

// timeType is the type word of time.Time.
var timeType = TypeOf[time.Time]()

// AtTime makes an interface of type time.Time whose value is the time
// whose words are *p (from Words), which must never be written again.
func AtTime(p *TimeWords) any { return timeType.At((*time.Time)(unsafe.Pointer(p))) }

// Works is false when interfaces are not laid out as At assumes, or a
// time.Time not as TimeWords.
var Works = check()

func check() bool {
	s, tm, n, f := "a", time.Unix(1, 2).UTC(), int64(1<<40), 2.5
	sl := []int{4, 5}
	if TypeOf[string]().At(&s) != any(s) ||
		TypeOf[time.Time]().At(&tm) != any(tm) ||
		TypeOf[int64]().At(&n) != any(n) ||
		TypeOf[float64]().At(&f) != any(f) {
		return false
	}
	got, ok := SliceType[[]int]().At(&sl).([]int)
	if !ok || len(got) != 2 || got[0] != 4 || got[1] != 5 || &got[0] != &sl[0] {
		return false
	}
	// A time.Time is three words, the last its location pointer, nil in
	// UTC and not nil in another location.
	w, plain := Words(tm)
	_, zonedPlain := Words(tm.In(time.FixedZone("x", 3600)))
	if unsafe.Sizeof(tm) != unsafe.Sizeof(w) || !plain || zonedPlain ||
		AtTime(&w) != any(tm) || !AtTime(&w).(time.Time).Equal(tm) {
		return false
	}
	// UTCWords' layout, before 1885 and after 2157 too (where a time with
	// a monotonic reading would keep its seconds elsewhere).
	for _, sec := range []int64{-210866760000, -2208988801, -1, 0, 1, 946684800, 5000000000, 9223372036} {
		for _, nsec := range []int32{0, 1, 999_999_999} {
			if w, _ := Words(time.Unix(sec, int64(nsec)).UTC()); w != UTCWords(sec, nsec) {
				return false
			}
		}
	}
	return true
}
