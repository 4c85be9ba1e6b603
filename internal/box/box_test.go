package box

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestAt checks that the layout assumption holds here, and that boxed
// values read back intact after garbage collections, while the slices they
// live in are referenced only through them.
func TestAt(t *testing.T) {
	if !Works {
		t.Fatal("interfaces are not laid out as At assumes")
	}
	strType := TypeOf[string]()
	sliceType := SliceType[[]int]()
	var got []any
	for i := range 10000 {
		strs := make([]string, 1) // a new slice each time, referenced only by the interface
		strs[0] = fmt.Sprint("value ", i)
		got = append(got, strType.At(&strs[0]))
		ints := []int{i, i + 1}
		got = append(got, sliceType.At(&ints))
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

// TestNamed checks that a named type is boxed as itself, not as another
// type of its shape.
func TestNamed(t *testing.T) {
	type name string
	n, s := name("a"), "a"
	if v, ok := TypeOf[name]().At(&n).(name); !ok || v != n {
		t.Errorf("a boxed name is %#v", TypeOf[name]().At(&n))
	}
	if v, ok := TypeOf[string]().At(&s).(string); !ok || v != s {
		t.Errorf("a boxed string is %#v", TypeOf[string]().At(&s))
	}
}

// TestDataOf checks that DataOf gives the pointer At was given, and tells
// one boxed value from an equal one boxed apart.
func TestDataOf(t *testing.T) {
	s := "x"
	strType := TypeOf[string]()
	v := strType.At(&s)
	if DataOf(v) != unsafe.Pointer(&s) {
		t.Fatal("DataOf does not give the pointer At was given")
	}
	w := v
	if DataOf(w) != DataOf(v) {
		t.Fatal("a copy of an interface has another data word")
	}
	s2 := "x"
	if DataOf(strType.At(&s2)) == DataOf(v) {
		t.Fatal("two values boxed apart share a data word")
	}
}

// TestPointerShapedRefused type-checks the package with uses of TypeOf and
// SliceType added: the supported types compile, and every pointer-shaped
// type (whose interface would hold its address instead of its value) is
// refused by the compiler.
func TestPointerShapedRefused(t *testing.T) {
	src, err := os.ReadFile("box.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil) // shared: time is checked once
	check := func(use string) error {
		var files []*ast.File
		for i, text := range []string{string(src), "package box\nimport (\"time\"; \"unsafe\")\nvar _ time.Time\nvar _ unsafe.Pointer\ntype name string\ntype field struct{ k string; v any }\nfunc use() { " + use + " }\n"} {
			f, err := parser.ParseFile(fset, fmt.Sprint("file", i, ".go"), text, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		conf := types.Config{Importer: imp}
		_, err := conf.Check("box", fset, files, nil)
		return err
	}
	for _, ok := range []string{
		"_ = TypeOf[string]()", "_ = TypeOf[name]()", "_ = TypeOf[int32]()", "_ = TypeOf[int64]()",
		"_ = TypeOf[float64]()", "_ = TypeOf[[16]byte]()", "_ = TypeOf[time.Time]()",
		"_ = SliceType[[]byte]()", "_ = SliceType[[]field]()", "_ = SliceType[[]any]()",
	} {
		if err := check(ok); err != nil {
			t.Errorf("%s: %v, want it to compile", ok, err)
		}
	}
	for _, bad := range []string{
		"_ = TypeOf[*int]()", "_ = TypeOf[map[string]int]()", "_ = TypeOf[chan int]()", "_ = TypeOf[func()]()",
		"_ = TypeOf[unsafe.Pointer]()", "_ = TypeOf[struct{ p *int }]()", "_ = TypeOf[[1]*int]()",
		"_ = TypeOf[any]()", "_ = TypeOf[*time.Time]()", "_ = SliceType[*[]int]()", "_ = SliceType[map[int]int]()",
		"var p *int; _ = TypeOf[string]().At(p)",
	} {
		if err := check(bad); err == nil {
			t.Errorf("%s compiles; want it refused", bad)
		} else if !strings.Contains(err.Error(), "does not satisfy") && !strings.Contains(err.Error(), "cannot use p") {
			t.Errorf("%s: %v; want it refused by the type's constraint", bad, err)
		}
	}
}

// TestAtTime checks that times boxed from plain words (AtTime) read back
// intact after garbage collections, while the blocks of words they live in
// are referenced only through them, and that Words refuses a time with a
// location pointer.
func TestAtTime(t *testing.T) {
	base := time.Date(2024, 2, 29, 23, 59, 58, 123456789, time.UTC)
	var got []any
	for i := range 10000 {
		block := make([]TimeWords, 2) // referenced only by the interface
		w, ok := Words(base.Add(time.Duration(i) * time.Hour))
		if !ok {
			t.Fatalf("time %d in UTC: Words refuses it", i)
		}
		block[1] = w
		got = append(got, AtTime(&block[1]))
		if i%1000 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	for i, v := range got {
		want := base.Add(time.Duration(i) * time.Hour)
		if tm, ok := v.(time.Time); !ok || tm != want || tm.Location() != time.UTC {
			t.Fatalf("time %d: %#v, want %v", i, v, want)
		}
	}
	for _, tm := range []time.Time{base.In(time.FixedZone("plus one", 3600)), base.Local(), time.Now()} {
		if _, ok := Words(tm); ok && tm.Location() != time.UTC {
			t.Errorf("%v (in %v): Words takes a time with a location", tm, tm.Location())
		}
	}
	if _, ok := Words(time.Unix(5, 6).UTC()); !ok {
		t.Error("Words refuses a time in UTC")
	}
}
