// Package box puts values into interfaces without an allocation per value.
//
// Storing a string, a time, a number or a slice in an interface (any)
// allocates a small object to hold it. Code that makes many such values
// in one go (a row's columns, a batch's documents) can instead keep the
// values in slices of their type, filled in order, and make each
// interface point at its element with At: one allocation serves hundreds
// of values. The interfaces are ordinary values of their types: the garbage
// collector sees the pointer into the slice and keeps the whole slice alive
// while any of them is referenced. The element must not be written once
// it is boxed: values stay immutable.
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

// eface is the layout of an interface value of type any.
type eface struct {
	typ  unsafe.Pointer
	data unsafe.Pointer
}

// Type is the type word of the interfaces At makes.
type Type unsafe.Pointer

// TypeOf is the type word of v's dynamic type.
func TypeOf(v any) Type { return Type((*eface)(unsafe.Pointer(&v)).typ) }

// DataOf is the data word of v: two interfaces holding the same boxed
// value have the same one.
func DataOf(v any) unsafe.Pointer { return (*eface)(unsafe.Pointer(&v)).data }

// At makes an interface of type t whose value is at p, which must point
// to a value of that type that is never written again.
func At(t Type, p unsafe.Pointer) (v any) {
	e := (*eface)(unsafe.Pointer(&v))
	e.typ, e.data = unsafe.Pointer(t), p
	return v
}

// Works is false when interfaces are not laid out as At assumes.
var Works = check()

func check() bool {
	s, tm, n, f := "a", time.Unix(1, 2).UTC(), int64(1<<40), 2.5
	sl := []int{4, 5}
	if At(TypeOf(s), unsafe.Pointer(&s)) != any(s) ||
		At(TypeOf(tm), unsafe.Pointer(&tm)) != any(tm) ||
		At(TypeOf(n), unsafe.Pointer(&n)) != any(n) ||
		At(TypeOf(f), unsafe.Pointer(&f)) != any(f) {
		return false
	}
	got, ok := At(TypeOf(sl), unsafe.Pointer(&sl)).([]int)
	return ok && len(got) == 2 && got[0] == 4 && got[1] == 5 && &got[0] == &sl[0]
}
