package transform

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// nested is a document whose field "a" holds levels-1 more levels of
// documents (arrays when inArrays), the innermost holding 1: the whole
// is levels deep, the document itself counting as one.
func nested(levels int, inArrays bool) Doc {
	var v any = int32(1)
	for i := 1; i < levels; i++ {
		if inArrays {
			v = Array{v}
		} else {
			v = Doc{{Key: "a", Value: v}}
		}
	}
	return Doc{{Key: "a", Value: v}}
}

func TestCheckKeys(t *testing.T) {
	many := Doc{}
	for i := 0; i < 40; i++ {
		many = append(many, Field{Key: fmt.Sprintf("k%d", i), Value: int32(i)})
	}
	for _, c := range []struct {
		name string
		doc  Doc
		path string // "" when the document is fine
		why  string
	}{
		{"plain", Doc{{Key: "_id", Value: int32(1)}, {Key: "a", Value: Doc{{Key: "b", Value: Array{Doc{{Key: "c", Value: "x"}}}}}}}, "", ""},
		{"dollar inside", Doc{{Key: "a$", Value: int32(1)}}, "", ""},
		{"dollar", Doc{{Key: "doc", Value: Doc{{Key: "$date", Value: int32(0)}}}}, "doc.$date", `starting with "$"`},
		{"dot", Doc{{Key: "doc", Value: Doc{{Key: "a.b", Value: int32(0)}}}}, "doc.a.b", `holding "."`},
		{"in an array", Doc{{Key: "x", Value: Array{int32(1), Doc{{Key: "$where", Value: "1"}}}}}, "x.1.$where", `starting with "$"`},
		{"empty", Doc{{Key: "doc", Value: Doc{{Key: "", Value: int32(0)}}}}, "doc.", "empty field name"},
		{"NUL", Doc{{Key: "a\x00b", Value: int32(0)}}, "a\x00b", "NUL"},
		{"repeated", Doc{{Key: "note", Value: "x"}, {Key: "color", Value: "red"}, {Key: "note", Value: "y"}}, "note", "two fields of one document"},
		{"repeated among many", append(append(Doc{}, many...), Field{Key: "k7", Value: int32(0)}), "k7", "two fields of one document"},
		{"same name in two documents", Doc{{Key: "a", Value: Doc{{Key: "n", Value: int32(1)}}}, {Key: "b", Value: Doc{{Key: "n", Value: int32(1)}}}}, "", ""},
		{"100 levels", nested(100, false), "", ""},
		{"101 levels", nested(101, false), strings.Repeat("a.", 99) + "a", "deeper than 100"},
		{"100 levels of arrays", nested(100, true), "", ""},
		{"101 levels of arrays", nested(101, true), "a" + strings.Repeat(".0", 99), "deeper than 100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckKeys(c.doc)
			if c.path == "" {
				if err != nil {
					t.Fatalf("CheckKeys = %v, want nil", err)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Path != c.path || !strings.Contains(ke.Reason, c.why) {
				t.Fatalf("CheckKeys = %#v, want path %q and a reason with %q", err, c.path, c.why)
			}
			if !strings.Contains(err.Error(), "filter the row") {
				t.Errorf("the message gives no way out: %v", err)
			}
		})
	}
}

// randomKeyDoc is a document of random shape whose keys are drawn from a
// small set holding every kind of bad name, so that duplicates, bad names
// and deep nesting all occur.
func randomKeyDoc(r *rand.Rand, depth int) Doc {
	keys := []string{"a", "b", "c", "d", "é", "", "$x", "x.y", "n\x00", "a$"}
	n := r.IntN(20)
	if r.IntN(8) == 0 {
		n = 17 + r.IntN(10) // past the map threshold
	}
	d := Doc{}
	for i := 0; i < n; i++ {
		var k string
		if r.IntN(6) == 0 {
			k = keys[r.IntN(len(keys))]
		} else {
			k = fmt.Sprintf("k%d", r.IntN(40))
		}
		d = append(d, Field{Key: k, Value: randomKeyValue(r, depth+1)})
	}
	return d
}

func randomKeyValue(r *rand.Rand, depth int) any {
	if depth > 3 && r.IntN(4) != 0 {
		return int32(depth)
	}
	switch r.IntN(4) {
	case 0:
		return randomKeyDoc(r, depth)
	case 1:
		a := Array{}
		for i := r.IntN(4); i > 0; i-- {
			a = append(a, randomKeyValue(r, depth+1))
		}
		return a
	}
	return "v"
}

// TestCheckKeysFastPath: CheckKeys' allocation-free first walk finds a
// problem exactly when the path-spelling walk reports one, on random
// documents and at the nesting limit.
func TestCheckKeysFastPath(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	bad := 0
	docs := []Doc{nested(MaxDepth, false), nested(MaxDepth+1, false), nested(MaxDepth, true), nested(MaxDepth+1, true)}
	for i := 0; i < 4000; i++ {
		docs = append(docs, randomKeyDoc(r, 1))
	}
	for i, d := range docs {
		slow := checkDoc(d, "", 1)
		if keysOK(d, 1) != (slow == nil) {
			t.Fatalf("document %d: first walk says ok=%v, full check says %v", i, keysOK(d, 1), slow)
		}
		if got := CheckKeys(d); (got == nil) != (slow == nil) || got != nil && got.Error() != slow.Error() {
			t.Fatalf("document %d: CheckKeys = %v, want %v", i, got, slow)
		}
		if slow != nil {
			bad++
		}
	}
	if bad < 200 || bad > len(docs)-200 {
		t.Fatalf("%d of %d random documents have a problem: the generator does not cover both cases", bad, len(docs))
	}
}

// TestDistinctNames holds DistinctNames to a map on documents of 0 to 150
// fields (each of its ways: the small mask, the large one, the map), with
// distinct names, with one name planted twice, and with names that share
// the cheap hash (same length, first, middle and last byte) so that the
// masks' bits collide and the search decides.
func TestDistinctNames(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 64))
	want := func(d Doc) bool {
		seen := map[string]bool{}
		for _, f := range d {
			if seen[f.Key] {
				return false
			}
			seen[f.Key] = true
		}
		return true
	}
	dups := 0
	for i := range 20_000 {
		n := r.IntN(151)
		d := make(Doc, 0, n)
		for j := range n {
			var k string
			switch i % 3 {
			case 0:
				k = fmt.Sprintf("col_%d_%d", j, r.IntN(3))
			case 1: // one hash for all: a?x?b
				k = fmt.Sprintf("a%cx%cb", 'A'+r.IntN(26), 'A'+r.IntN(26))
			default:
				k = fmt.Sprintf("%c%d", 'a'+r.IntN(26), r.IntN(1000))
			}
			d = append(d, Field{Key: k})
		}
		if n > 1 && r.IntN(2) == 0 {
			a, b := r.IntN(n), r.IntN(n)
			if a != b {
				d[b].Key = d[a].Key
			}
		}
		w := want(d)
		if !w {
			dups++
		}
		if got := DistinctNames(d); got != w {
			t.Fatalf("document %d (%d fields): DistinctNames = %v, want %v: %v", i, n, got, w, d)
		}
	}
	if dups < 5000 || dups > 15_000 {
		t.Fatalf("%d of 20000 documents hold a name twice: the cases are not both covered", dups)
	}
}

func BenchmarkDistinctNames(b *testing.B) {
	for _, n := range []int{8, 24, 60, 100, 200} {
		d := make(Doc, n)
		for i := range d {
			d[i].Key = fmt.Sprintf("column_%d", i)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !DistinctNames(d) {
					b.Fatal("distinct names reported equal")
				}
			}
		})
	}
}

// TestNameLists holds NameLists.Distinct to DistinctNames over documents
// that reuse a few lists of name strings (a mapping's levels) and change
// them: names left out (NULL fields), a name of the list put twice, a name
// swapped for an equal one in other memory (a copy: the same text, a
// different string), two names swapped, names from data (new strings in
// every document), empty and one-field documents, more lists than it
// remembers. Then that a mapping's lists stay remembered among documents
// of names from data, and that a hit allocates nothing.
func TestNameLists(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 4))
	lists := make([][]string, 7)
	for i := range lists {
		n := []int{0, 1, 2, 16, 17, 25, 75}[i]
		for j := range n {
			lists[i] = append(lists[i], fmt.Sprintf("v%d", j))
		}
	}
	var l NameLists
	var nilLists *NameLists
	kinds := map[string]int{}
	for i := range 50_000 {
		base := lists[r.IntN(len(lists))]
		if r.IntN(3) > 0 { // most documents: the two widest lists, as a parent and its children
			base = lists[5+r.IntN(2)]
		}
		d := make(Doc, 0, len(base)+1)
		for _, k := range base {
			if r.IntN(8) > 0 || i%2 == 0 {
				d = append(d, Field{Key: k})
			}
		}
		kind := "as built"
		if len(d) < len(base) {
			kind = "names left out"
		}
		if n := len(d); n > 1 {
			a, b := r.IntN(n), r.IntN(n)
			switch r.IntN(8) {
			case 0:
				if a != b {
					d[b].Key, kind = d[a].Key, "a name twice"
				}
			case 1:
				if a != b {
					d[b].Key, kind = strings.Clone(d[a].Key), "a name twice, one a copy"
				}
			case 2:
				d[a].Key, kind = strings.Clone(d[a].Key), "a copy of a name"
			case 3:
				if a != b {
					d[a].Key, d[b].Key, kind = d[b].Key, d[a].Key, "two names swapped"
				}
			case 4:
				d, kind = append(d, Field{Key: d[a].Key}), "a name added twice"
			case 5:
				for j := range d {
					d[j].Key = strings.Clone(d[j].Key)
				}
				kind = "names from data"
			}
		}
		kinds[kind]++
		want := DistinctNames(d)
		if got := l.Distinct(d); got != want {
			t.Fatalf("document %d (%s, %d fields): Distinct = %v, DistinctNames %v", i, kind, len(d), got, want)
		}
		if got := nilLists.Distinct(d); got != want {
			t.Fatalf("document %d (%s): a nil NameLists says %v, want %v", i, kind, got, want)
		}
	}
	for _, k := range []string{"as built", "names left out", "a name twice", "a name twice, one a copy", "a copy of a name", "two names swapped", "a name added twice", "names from data"} {
		if kinds[k] < 1000 {
			t.Fatalf("%d documents of kind %q: not covered", kinds[k], k)
		}
	}

	// A parent's and a child's full lists, then documents with names left
	// out, among documents of names from data: only the data's are
	// searched.
	var m NameLists
	doc := func(names []string, keep func(int) bool) Doc {
		var d Doc
		for j, k := range names {
			if keep(j) {
				d = append(d, Field{Key: k})
			}
		}
		return d
	}
	all := func(int) bool { return true }
	m.Distinct(doc(lists[5], all))
	m.Distinct(doc(lists[6], all))
	before := m.searched
	data := 0
	for i := range 1000 {
		if i%3 == 0 {
			d := doc(lists[5], all)
			for j := range d {
				d[j].Key = strings.Clone(d[j].Key)
			}
			m.Distinct(d)
			data++
			continue
		}
		d := doc(lists[5+i%2], func(j int) bool { return (i+j)%5 != 0 })
		if !m.Distinct(d) {
			t.Fatalf("document %d with names left out: not distinct", i)
		}
	}
	if got := m.searched - before; got != data {
		t.Fatalf("%d documents searched, want the %d of names from data alone", got, data)
	}
	d := doc(lists[6], all)
	if n := testing.AllocsPerRun(100, func() {
		if !m.Distinct(d) {
			t.Fatal("a distinct document reported otherwise")
		}
	}); n != 0 {
		t.Fatalf("a remembered list allocates %v times", n)
	}
}

func BenchmarkNameLists(b *testing.B) {
	for _, n := range []int{8, 25, 75} {
		d := make(Doc, n)
		for i := range d {
			d[i].Key = fmt.Sprintf("column_%d", i)
		}
		var l NameLists
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !l.Distinct(d) {
					b.Fatal("distinct names reported equal")
				}
			}
		})
	}
}
