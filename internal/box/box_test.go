package box

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"
)

// TestAt checks that the layout assumption holds here, and that boxed
// values read back intact after garbage collections, while the slices they
// live in are referenced only through them.
func TestAt(t *testing.T) {
	if !Works {
		t.Fatal("interfaces are not laid out as At assumes")
	}
	strType := TypeOf("")
	sliceType := TypeOf([]int(nil))
	var got []any
	for i := range 10000 {
		strs := make([]string, 1) // a new slice each time, referenced only by the interface
		strs[0] = fmt.Sprint("value ", i)
		got = append(got, At(strType, unsafe.Pointer(&strs[0])))
		ints := []int{i, i + 1}
		got = append(got, At(sliceType, unsafe.Pointer(&ints)))
		if i%1000 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	for i := range 10000 {
		if s := got[2*i]; s != fmt.Sprint("value ", i) {
			t.Fatalf("string %d: %#v", i, s)
		}
		if s := got[2*i+1]; !reflect.DeepEqual(s, []int{i, i + 1}) {
			t.Fatalf("slice %d: %#v", i, s)
		}
	}
}

// TestDataOf checks that DataOf gives the pointer At was given, and tells
// one boxed value from an equal one boxed apart.
func TestDataOf(t *testing.T) {
	s := "x"
	v := At(TypeOf(s), unsafe.Pointer(&s))
	if DataOf(v) != unsafe.Pointer(&s) {
		t.Fatal("DataOf does not give the pointer At was given")
	}
	w := v
	if DataOf(w) != DataOf(v) {
		t.Fatal("a copy of an interface has another data word")
	}
	s2 := "x"
	if DataOf(At(TypeOf(s2), unsafe.Pointer(&s2))) == DataOf(v) {
		t.Fatal("two values boxed apart share a data word")
	}
}
