package load

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/transform"
)

// driverRelaxedJSON appends raw as the driver writes relaxed Extended
// JSON: the reference AppendExtJSON is held to.
func driverRelaxedJSON(dst []byte, raw bson.Raw) ([]byte, error) {
	b, err := bson.MarshalExtJSON(raw, false, false)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// driverJSON is the reference: BSON through the driver's Extended JSON writer.
func driverJSON(t testing.TB, d transform.Doc) string {
	t.Helper()
	raw, err := AppendDocument(nil, d)
	if err != nil {
		t.Fatalf("AppendDocument: %v", err)
	}
	out, err := driverRelaxedJSON(nil, raw)
	if err != nil {
		t.Fatalf("AppendRelaxedJSON: %v", err)
	}
	return string(out)
}

// sizeOf is the BSON size AppendExtJSONSized adds up.
func sizeOf(d transform.Doc) (int, error) {
	_, n, err := AppendExtJSONSized(nil, d)
	return n, err
}

func TestAppendExtJSONMatchesDriver(t *testing.T) {
	uuid := transform.UUID{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	cases := []struct {
		name  string
		value any
	}{
		{"int32_min", int32(math.MinInt32)},
		{"int64_max", int64(math.MaxInt64)},
		{"double_integral", 1.0},
		{"double_negative_zero", math.Copysign(0, -1)},
		{"double_large", 1e21},
		{"double_small", 1.5e-7},
		{"double_max", math.MaxFloat64},
		{"double_nan", math.NaN()},
		{"double_infinity", math.Inf(1)},
		{"double_minus_infinity", math.Inf(-1)},
		{"string_escapes", "a \"q\" \\ <b> & \n\r\t\b\f \x00\x01\x1f \x7f"},
		{"string_unicode", "Zoë 東京 🎉 \u2028\u2029 \ufeff"},
		{"string_invalid_utf8", "a\xffb\xc3"},
		{"string_empty", ""},
		{"bool", true},
		{"null", nil},
		{"date_millis", time.Date(2024, 2, 29, 12, 0, 0, 250000000, time.UTC)},
		{"date_whole_second", time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)},
		{"date_submillisecond", time.Date(2024, 2, 29, 12, 0, 0, 999999, time.UTC)},
		{"date_before_1970", time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC)},
		{"date_before_epoch_millis", time.Date(1969, 12, 31, 23, 59, 59, 999000000, time.UTC)},
		{"date_after_9999", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"date_other_zone", time.Date(2024, 1, 1, 1, 0, 0, 0, time.FixedZone("x", 3600))},
		{"decimal", transform.Decimal("12.50")},
		{"decimal_exponent", transform.Decimal("1E+3")},
		{"decimal_negative_small", transform.Decimal("-0.000001")},
		{"decimal_nan", transform.Decimal("NaN")},
		{"decimal_infinity", transform.Decimal("-Infinity")},
		{"uuid", uuid},
		{"binary", transform.Binary{1, 2, 3}},
		{"binary_empty", transform.Binary{}},
		{"doc", transform.Doc{{Key: "b", Value: int32(1)}, {Key: "a", Value: transform.Array{int32(1), 2.5}}}},
		{"empty_doc", transform.Doc{}},
		{"empty_array", transform.Array{}},
		{"key_escapes", transform.Doc{{Key: "a\"b\\c\n", Value: int32(1)}, {Key: "Zoë", Value: int32(2)}}},
		{"nested", transform.Array{transform.Array{transform.Doc{{Key: "x", Value: transform.Array{nil, "y"}}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := transform.Doc{{Key: "_id", Value: int32(1)}, {Key: "v", Value: tc.value}, {Key: "after", Value: "x"}}
			got, err := AppendExtJSON([]byte("prefix"), d)
			if err != nil {
				t.Fatal(err)
			}
			if want := "prefix" + driverJSON(t, d); string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			size, err := sizeOf(d)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := AppendDocument(nil, d)
			if size != len(raw) {
				t.Errorf("AppendExtJSONSized size = %d, BSON is %d bytes", size, len(raw))
			}
		})
	}
}

func TestAppendExtJSONErrors(t *testing.T) {
	for _, d := range []transform.Doc{
		{{Key: "price", Value: transform.Decimal("12,5")}},
		{{Key: "a", Value: transform.Doc{{Key: "b", Value: transform.Array{int32(1), map[string]any{}}}}}},
		{{Key: "x", Value: transform.Doc{{Key: "a\x00b", Value: int32(1)}}}},
	} {
		_, want := AppendDocument(nil, d)
		_, got := AppendExtJSON(nil, d)
		if want == nil || got == nil || got.Error() != want.Error() {
			t.Errorf("AppendExtJSON error %v, AppendDocument error %v: want the same", got, want)
		}
		if _, got := sizeOf(d); got == nil || got.Error() != want.Error() {
			t.Errorf("AppendExtJSONSized size error %v, AppendDocument error %v: want the same", got, want)
		}
	}
}

// randomDoc makes a document of every value type, nested up to depth.
func randomDoc(r *rand.Rand, depth int) transform.Doc {
	n := r.IntN(6)
	d := make(transform.Doc, n)
	for i := range d {
		d[i] = transform.Field{Key: randomString(r), Value: randomValue(r, depth)}
	}
	return d
}

func randomString(r *rand.Rand) string {
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\x01", "\x7f", "é", "東", "🎉", "\u2028", "\xff", "<", "&", "0"}
	var b strings.Builder
	for range r.IntN(8) {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(14); {
	case k == 0:
		return nil
	case k == 1:
		return int32(r.Uint32())
	case k == 2:
		return int64(r.Uint64())
	case k == 3:
		return []float64{r.NormFloat64() * 1e6, float64(r.IntN(1000)), math.Float64frombits(r.Uint64()), math.Inf(-1)}[r.IntN(4)]
	case k == 4:
		return randomString(r)
	case k == 5:
		return r.IntN(2) == 0
	case k == 6:
		return time.UnixMilli(r.Int64N(400_000_000_000_000) - 200_000_000_000_000).UTC()
	case k == 7:
		return transform.Decimal([]string{"0", "-1.50", "3.14159", "1E+5", "123456789012345678901234567890.1234"}[r.IntN(5)])
	case k == 8:
		var u transform.UUID
		for i := range u {
			u[i] = byte(r.Uint32())
		}
		return u
	case k == 9:
		b := make(transform.Binary, r.IntN(9))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	case k < 12 && depth > 0:
		return randomDoc(r, depth-1)
	case depth > 0:
		a := make(transform.Array, r.IntN(5))
		for i := range a {
			a[i] = randomValue(r, depth-1)
		}
		return a
	}
	return "leaf"
}

func FuzzAppendExtJSON(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := rand.New(rand.NewPCG(seed, seed>>7))
		d := randomDoc(r, 3)
		for i := range d { // NUL is refused by both; keep the documents valid
			d[i].Key = strings.ReplaceAll(d[i].Key, "\x00", "")
		}
		got, err := AppendExtJSON(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		if want := driverJSON(t, d); string(got) != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		size, err := sizeOf(d)
		if err != nil {
			t.Fatal(err)
		}
		if raw, _ := AppendDocument(nil, d); size != len(raw) {
			t.Fatalf("AppendExtJSONSized size = %d, BSON is %d bytes", size, len(raw))
		}
	})
}

func TestAppendExtJSONRandom(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 99))
		d := randomDoc(r, 3)
		got, err := AppendExtJSON(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		if want := driverJSON(t, d); string(got) != want {
			t.Fatalf("seed %d:\ngot  %s\nwant %s", seed, got, want)
		}
		size, _ := sizeOf(d)
		if raw, _ := AppendDocument(nil, d); size != len(raw) {
			t.Fatalf("seed %d: AppendExtJSONSized size = %d, BSON is %d bytes", seed, size, len(raw))
		}
	}
}

func BenchmarkAppendExtJSON(b *testing.B) {
	doc := benchDoc()
	var buf []byte
	var err error
	b.ReportAllocs()
	for b.Loop() {
		buf, err = AppendExtJSON(buf[:0], doc)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDriverExtJSON(b *testing.B) {
	doc := benchDoc()
	b.ReportAllocs()
	for b.Loop() {
		raw, err := AppendDocument(nil, doc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := driverRelaxedJSON(nil, raw); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDoc() transform.Doc {
	return transform.Doc{
		{Key: "_id", Value: int64(123456)},
		{Key: "firstName", Value: "Ada"},
		{Key: "lastName", Value: "Lovelace"},
		{Key: "addresses", Value: transform.Array{
			transform.Doc{{Key: "line1", Value: "12 St James's Square"}, {Key: "city", Value: "London"}, {Key: "zip", Value: int32(10001)}},
		}},
		{Key: "contactDetails", Value: transform.Array{
			transform.Doc{{Key: "email", Value: "ada@example.org"}},
			transform.Doc{{Key: "phone", Value: "+44 20 1234"}, {Key: "extension", Value: int32(12)}},
		}},
	}
}

// TestAppendJSONDate holds the direct date formatting to the driver's, at
// the edges of the ISO range and on random instants of every era.
func TestAppendJSONDate(t *testing.T) {
	ms := []int64{0, -1, 1, 999, 1000, 86_399_999, 86_400_000, 951_782_400_000, 253_402_300_799_999, 253_402_300_800_000,
		-62_135_596_800_000, math.MaxInt64, math.MinInt64, 1_709_210_096_120, 1_709_210_096_100, 1_709_210_096_001}
	r := rand.New(rand.NewPCG(1970, 9999))
	for range 20000 {
		switch r.IntN(3) {
		case 0:
			ms = append(ms, r.Int64N(maxISODateMillis))
		case 1:
			ms = append(ms, r.Int64N(maxISODateMillis)/1000*1000+int64(r.IntN(10))*100)
		default:
			ms = append(ms, int64(r.Uint64()))
		}
	}
	for _, m := range ms {
		d := transform.Doc{{Key: "d", Value: time.UnixMilli(m).UTC()}}
		got, err := AppendExtJSON(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		if want := driverJSON(t, d); string(got) != want {
			t.Fatalf("%d ms:\ngot  %s\nwant %s", m, got, want)
		}
	}
}

// TestSafe8 checks the word-at-a-time test against the byte table on every
// byte value in every position.
func TestSafe8(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			want := c < utf8.RuneSelf && jsonSafe[c]
			if got := safe8(string(b)); got != want {
				t.Fatalf("byte %#x at %d: safe8 %v, want %v", c, pos, got, want)
			}
		}
	}
}

// TestKeyTextsMatch holds the writer that remembers field names to the
// one that does not: random documents, then the same documents again (the
// names are now remembered), then names from data of one length, each a
// new string met twice (so that it is remembered), with collections in
// between that free the ones no longer held: the memory of a dropped name
// comes back as another's, which is how one address can hold different
// names in turn.
func TestKeyTextsMatch(t *testing.T) {
	var keys keyTexts
	docs := make([]transform.Doc, 0, 2000)
	for seed := range uint64(2000) {
		docs = append(docs, randomDoc(rand.New(rand.NewPCG(seed, 7)), 3))
	}
	check := func(d transform.Doc) {
		t.Helper()
		want, wantSize, wantErr := AppendExtJSONSized(nil, d)
		got, size, err := keys.doc(nil, d, 0)
		if err = fieldErr(err); (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("error %v, want %v", err, wantErr)
		}
		if err == nil && (string(got) != string(want) || size != wantSize) {
			t.Fatalf("got  %s (%d)\nwant %s (%d)", got, size, want, wantSize)
		}
	}
	for range 2 {
		for _, d := range docs {
			check(d)
		}
	}
	buf := make([]byte, 6)
	r := rand.New(rand.NewPCG(1, 2))
	addrs := map[uintptr]string{}
	reused := 0
	for i := range 20_000 {
		for i := range buf {
			buf[i] = "ab\"\\\x00\x01é"[r.IntN(8)]
		}
		key := string(buf) // a new string
		if prev, ok := addrs[uintptr(unsafe.Pointer(unsafe.StringData(key)))]; ok && prev != key {
			reused++
		}
		addrs[uintptr(unsafe.Pointer(unsafe.StringData(key)))] = strings.Clone(key)
		d := transform.Doc{{Key: key, Value: int32(1)}, {Key: "x", Value: transform.Doc{{Key: key, Value: nil}}}}
		check(d)
		check(d)
		if i%500 == 0 {
			runtime.GC()
		}
	}
	if reused == 0 {
		t.Fatal("no address held two different names: the case is not covered")
	}
}

// TestJSONLineChecks holds the directory writer's one walk, which also
// checks what transform.CheckKeys checks, to CheckKeys followed by the
// plain writer: the same error text for every document CheckKeys refuses
// (bad names, duplicate names, more than 16 fields, nesting past
// MaxDepth, in documents and in arrays), and otherwise the same line or
// the same encoding error.
func TestJSONLineChecks(t *testing.T) {
	names := []string{"a", "b", "c", "$x", "x.y", "", "n\x00ul", "é", "_id", "a"}
	r := rand.New(rand.NewPCG(5, 6))
	var gen func(depth int) transform.Doc
	value := func(depth int) any {
		switch r.IntN(8) {
		case 0:
			return gen(depth + 1)
		case 1:
			a := transform.Array{}
			for range r.IntN(3) {
				if r.IntN(2) == 0 {
					a = append(a, gen(depth+2))
				} else {
					a = append(a, int32(r.IntN(9)))
				}
			}
			return a
		case 2:
			return transform.Decimal([]string{"1.5", "x", "1e9999"}[r.IntN(3)])
		default:
			return randomString(r)
		}
	}
	gen = func(depth int) transform.Doc {
		n := r.IntN(4)
		if r.IntN(20) == 0 {
			n = 17 + r.IntN(3)
		}
		d := transform.Doc{}
		for i := range n {
			k := names[r.IntN(len(names))]
			if r.IntN(3) > 0 {
				k = fmt.Sprintf("f%d", i) // mostly good, distinct names
			}
			var v any = int64(i)
			if depth < 4 {
				v = value(depth)
			}
			d = append(d, transform.Field{Key: k, Value: v})
		}
		return d
	}
	deep := func(levels int, inArray bool) transform.Doc {
		d := transform.Doc{{Key: "leaf", Value: int32(1)}}
		for range levels - 1 {
			if inArray {
				d = transform.Doc{{Key: "a", Value: transform.Array{d}}}
			} else {
				d = transform.Doc{{Key: "d", Value: d}}
			}
		}
		return d
	}
	docs := []transform.Doc{deep(transform.MaxDepth, false), deep(transform.MaxDepth+1, false), deep(50, true), deep(51, true)}
	for range 20000 {
		docs = append(docs, gen(1))
	}
	var keys keyTexts
	refused := 0
	for i, body := range docs {
		d := transform.Document{Body: body}
		got, err := appendJSONLine(nil, d, 200, &keys)
		var want []byte
		wantErr := transform.CheckKeys(body)
		if wantErr == nil {
			var size int
			want, size, wantErr = AppendExtJSONSized(nil, body)
			if wantErr == nil && size > 200 {
				want, wantErr = nil, &TooLargeError{Size: size, Limit: 200}
			}
		}
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("document %d: error %v, want %v", i, err, wantErr)
		}
		if err == nil && string(got) != string(want)+"\n" {
			t.Fatalf("document %d:\ngot  %s\nwant %s", i, got, want)
		}
		if err != nil {
			refused++
		}
	}
	if refused < 1000 || refused > len(docs)-1000 {
		t.Fatalf("%d of %d documents refused: the mix does not test both sides", refused, len(docs))
	}
}

// TestDayTexts holds the writer to the driver on dates on a few days at
// random times of day (the days' texts from dayTexts, but the last's), and
// dates before 1970 and after 9999.
func TestDayTexts(t *testing.T) {
	var keys keyTexts
	r := rand.New(rand.NewPCG(3, 9))
	days := []int64{0, 1, 64, 128, 11_000, 11_064, 19_000, 2_932_896} // 2_932_896: 9999-12-31
	for i := range 5000 {
		ms := days[r.IntN(len(days))]*86_400_000 + r.Int64N(86_400_000)
		switch r.IntN(20) {
		case 0:
			ms = -r.Int64N(1e13) - 1
		case 1:
			ms = maxISODateMillis + r.Int64N(1e9)
		case 2:
			ms -= ms % 1000
		}
		d := transform.Doc{{Key: "at", Value: time.UnixMilli(ms).UTC()}}
		got, _, err := keys.doc(nil, d, 0)
		if err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			if want := driverJSON(t, d); string(got) != want {
				t.Fatalf("%d ms:\ngot  %s\nwant %s", ms, got, want)
			}
		} else if want, _ := AppendExtJSON(nil, d); string(got) != string(want) {
			t.Fatalf("%d ms:\ngot  %s\nwant %s", ms, got, want)
		}
	}
}

// TestKeyTextsRemember writes documents of a mapping's names - 64 names,
// each its own string, as a plan holds them, in documents of 41 and 23
// fields - then documents of names from data, which push them out, then
// the mapping's documents again: each time, after a round or two, every
// name is remembered (none written again without its remembered text).
func TestKeyTextsRemember(t *testing.T) {
	names := make([]string, 64)
	for i := range names {
		names[i] = strings.Clone(fmt.Sprintf("column_%d", i))
	}
	docs := []transform.Doc{make(transform.Doc, 41), make(transform.Doc, 23)}
	for i := range docs[0] {
		docs[0][i] = transform.Field{Key: names[i], Value: int32(i)}
	}
	for i := range docs[1] {
		docs[1][i] = transform.Field{Key: names[41+i], Value: "x"}
	}
	var keys keyTexts
	var buf []byte
	write := func(d transform.Doc) {
		var err error
		if buf, _, err = keys.doc(buf[:0], d, 1); err != nil {
			t.Fatal(err)
		}
	}
	// settle writes rounds of the mapping's documents until one writes
	// every name from its remembered text, and then 100 more.
	settle := func(when string) {
		for round := 0; ; round++ {
			before := keys.misses
			write(docs[0])
			write(docs[1])
			if keys.misses == before {
				break
			}
			if round == 3 {
				t.Fatalf("%s: round %d still writes %d names without their remembered text", when, round, keys.misses-before)
			}
		}
		before := keys.misses
		for range 100 {
			write(docs[0])
			write(docs[1])
		}
		if got := keys.misses - before; got != 0 {
			t.Fatalf("%s: %d names written without their remembered text in 100 rounds", when, got)
		}
	}
	settle("first")
	if keys.misses < len(names) {
		t.Fatalf("%d names met without their text, want at least %d: the count does not count", keys.misses, len(names))
	}
	for i := range 2000 {
		write(transform.Doc{{Key: fmt.Sprintf("data_%d", i), Value: true}})
	}
	settle("after names from data")
}

// TestKeyTextsDataNames: names from data are new strings in every row
// (jsonb keys decoded into a document); the writer writes them without
// remembering them (no copies, no allocations) and without pushing a
// mapping's remembered names out.
func TestKeyTextsDataNames(t *testing.T) {
	mapping := transform.Doc{{Key: "id", Value: int32(1)}, {Key: "name", Value: "x"}, {Key: "price", Value: 1.5}}
	rows := make([]transform.Doc, 4000)
	for i := range rows {
		// the same texts in every row, each a string of its own
		rows[i] = transform.Doc{{Key: strings.Clone("sku"), Value: "a"}, {Key: strings.Clone("qty"), Value: int32(i)},
			{Key: strings.Clone(fmt.Sprintf("k%d", i%50)), Value: true}}
	}
	var keys keyTexts
	buf := make([]byte, 0, 1024)
	write := func(d transform.Doc) {
		var err error
		if buf, _, err = keys.doc(buf[:0], d, 1); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		write(mapping)
	}
	mappingMisses := keys.misses
	i := 0
	allocs := testing.AllocsPerRun(len(rows)-1, func() {
		write(rows[i])
		write(mapping)
		i++
	})
	if allocs != 0 {
		t.Errorf("%.2f allocations a row of names from data, want 0", allocs)
	}
	if got, want := keys.misses-mappingMisses, 3*len(rows); got != want {
		t.Errorf("%d names written without remembered text, want %d (the rows' names only: the mapping's stay remembered)", got, want)
	}
	remembered := 0
	for _, s := range keys.names {
		if s.text != "" {
			remembered++
			if s.key != "id" && s.key != "name" && s.key != "price" {
				t.Errorf("name %q from data remembered", s.key)
			}
		}
	}
	if remembered != len(mapping) {
		t.Errorf("%d names remembered, want the mapping's %d", remembered, len(mapping))
	}
	// The bytes are those of a writer that remembers nothing.
	for _, d := range []transform.Doc{rows[7], mapping} {
		want, err := AppendExtJSON(nil, d)
		if err != nil {
			t.Fatal(err)
		}
		write(d)
		if !bytes.Equal(buf, want) {
			t.Errorf("wrote %s, want %s", buf, want)
		}
	}
}
