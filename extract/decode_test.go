package extract

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/denorm/denorm/internal/box"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// sameValue is value equality for decoded values: exact (reflect.DeepEqual:
// a time's location and representation count), except that NaN equals NaN.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		if y, ok := b.(float64); ok && math.IsNaN(x) && math.IsNaN(y) {
			return true
		}
	case transform.Array:
		y, ok := b.(transform.Array)
		if !ok || len(x) != len(y) || (x == nil) != (y == nil) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// short prints v for a failure message, long values abbreviated.
func short(v any) string { return abbrev(fmt.Sprintf("%#v", v)) }

// decodeCase is one column of the random table: its type and a generator
// of SQL input text for its values (nil: NULL).
type decodeCase struct {
	name, typ string
	gen       func(r *rand.Rand) *string
}

func ptr(s string) *string { return &s }

// pick returns one of the special values one time in four, else gen's.
func pick(r *rand.Rand, special []string, gen func(r *rand.Rand) string) *string {
	switch {
	case r.IntN(12) == 0:
		return nil
	case r.IntN(4) == 0:
		return ptr(special[r.IntN(len(special))])
	}
	return ptr(gen(r))
}

func digits(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + r.IntN(10))
	}
	return string(b)
}

// randNumeric is a decimal with up to intDigits integer and fracDigits
// fractional digits, often with runs of zeros.
func randNumeric(r *rand.Rand, intDigits, fracDigits int) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteByte('-')
	}
	in := digits(r, 1+r.IntN(intDigits))
	if r.IntN(3) == 0 {
		in = in[:1] + strings.Repeat("0", len(in)-1)
	}
	b.WriteString(in)
	if fracDigits > 0 && r.IntN(4) != 0 {
		f := digits(r, 1+r.IntN(fracDigits))
		if r.IntN(3) == 0 {
			f = strings.Repeat("0", len(f)-1) + f[len(f)-1:]
		}
		b.WriteString("." + f)
	}
	return b.String()
}

// randText is valid UTF-8 without NUL: ASCII, accents, CJK, emoji, quotes,
// backslashes, spaces at the ends.
func randText(r *rand.Rand, max int) string {
	pieces := []string{"a", "Z", " ", "é", "ß", "日本", "😀", `"`, `\`, "'", "\t", "\n", "x y", "ü", "\u2028", "~"}
	var b strings.Builder
	for n := r.IntN(max + 1); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randJSON(r *rand.Rand, depth int) string {
	switch k := r.IntN(8); {
	case depth > 2 || k < 3:
		switch r.IntN(7) {
		case 0:
			return "null"
		case 1:
			return strconv.FormatBool(r.IntN(2) == 0)
		case 2:
			return strconv.Itoa(r.IntN(1 << 20))
		case 3:
			return []string{"2147483648", "-9223372036854775808", "1e300", "0.5", "-0", "123456789012345678901234567890"}[r.IntN(6)]
		default:
			s, _ := json.Marshal(randText(r, 6))
			return string(s)
		}
	case k < 6:
		var parts []string
		for i := r.IntN(4); i > 0; i-- {
			key, _ := json.Marshal(randText(r, 3))
			parts = append(parts, string(key)+":"+randJSON(r, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	default:
		var parts []string
		for i := r.IntN(4); i > 0; i-- {
			parts = append(parts, randJSON(r, depth+1))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
}

func randDate(r *rand.Rand) time.Time {
	// 4713 BC .. 5874897 AD, mostly near now.
	if r.IntN(3) == 0 {
		return time.Date(-4712+r.IntN(5874897+4712), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
	}
	return time.Date(1900+r.IntN(200), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
}

// pgDate writes t as PostgreSQL input (years <= 0 as BC).
func pgDate(t time.Time, layout string) string {
	y := t.Year()
	bc := ""
	if y <= 0 {
		y, bc = 1-y, " BC"
	}
	return fmt.Sprintf("%04d", y) + t.Format(layout) + bc
}

func randTimestamp(r *rand.Rand, zone bool) string {
	var t time.Time
	if r.IntN(3) == 0 {
		t = time.Date(-4712+r.IntN(294276+4712), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1_000_000)*1000, time.UTC)
	} else {
		t = time.Unix(r.Int64N(4_000_000_000)-1_000_000_000, r.Int64N(1_000_000)*1000).UTC()
	}
	s := pgDate(t, "-01-02 15:04:05.999999")
	if zone {
		if strings.HasSuffix(s, " BC") {
			return strings.TrimSuffix(s, " BC") + "+00 BC"
		}
		return s + []string{"+00", "+05:30", "-08"}[r.IntN(3)]
	}
	return s
}

var decodeCases = []decodeCase{
	{"i2", "smallint", func(r *rand.Rand) *string {
		return pick(r, []string{"-32768", "32767", "0"}, func(r *rand.Rand) string { return strconv.Itoa(r.IntN(65536) - 32768) })
	}},
	{"i4", "integer", func(r *rand.Rand) *string {
		return pick(r, []string{"-2147483648", "2147483647", "0"}, func(r *rand.Rand) string { return strconv.Itoa(int(r.Int32())) })
	}},
	{"i8", "bigint", func(r *rand.Rand) *string {
		return pick(r, []string{"-9223372036854775808", "9223372036854775807"}, func(r *rand.Rand) string { return strconv.FormatInt(r.Int64()-r.Int64(), 10) })
	}},
	{"f4", "real", func(r *rand.Rand) *string {
		return pick(r, []string{"NaN", "Infinity", "-Infinity", "0.1", "-0", "3.4028235e38", "1e-45"}, func(r *rand.Rand) string {
			return strconv.FormatFloat(float64(math.Float32frombits(r.Uint32())), 'g', -1, 32)
		})
	}},
	{"f8", "double precision", func(r *rand.Rand) *string {
		return pick(r, []string{"NaN", "Infinity", "-Infinity", "-0", "1.7976931348623157e308", "5e-324"}, func(r *rand.Rand) string {
			f := math.Float64frombits(r.Uint64())
			if math.IsNaN(f) || math.IsInf(f, 0) {
				f = 1.5
			}
			return strconv.FormatFloat(f, 'g', -1, 64)
		})
	}},
	{"num", "numeric", func(r *rand.Rand) *string {
		return pick(r, []string{"NaN", "Infinity", "-Infinity", "0", "0.000", "-0.0", "1e400", "-1e-400", "1" + strings.Repeat("0", 1000),
			"9999999999999999999999999999999999", "12345678901234567890123456789012345", "0.0000001", "100000000000000000000.5"},
			func(r *rand.Rand) string { return randNumeric(r, 40, 40) })
	}},
	{"num12_2", "numeric(12,2)", func(r *rand.Rand) *string {
		return pick(r, []string{"0", "-0.00", "9999999999.99", "-9999999999.99", "0.01"}, func(r *rand.Rand) string { return randNumeric(r, 10, 4) })
	}},
	{"num5_neg2", "numeric(5,-2)", func(r *rand.Rand) *string {
		return pick(r, []string{"0", "9999900", "-50"}, func(r *rand.Rand) string { return randNumeric(r, 7, 2) })
	}},
	{"num38_30", "numeric(38,30)", func(r *rand.Rand) *string {
		return pick(r, []string{"0", "0.000000000000000000000000000001"}, func(r *rand.Rand) string { return randNumeric(r, 8, 35) })
	}},
	{"txt", "text", func(r *rand.Rand) *string {
		return pick(r, []string{"", " ", "日本語"}, func(r *rand.Rand) string { return randText(r, 12) })
	}},
	{"vc", "varchar(20)", func(r *rand.Rand) *string {
		return pick(r, []string{""}, func(r *rand.Rand) string { return randText(r, 5) })
	}},
	{"ch", "char(10)", func(r *rand.Rand) *string {
		return pick(r, []string{"", "a", "abcdefghij", "日本"}, func(r *rand.Rand) string { return randText(r, 4) })
	}},
	{"nm", "name", func(r *rand.Rand) *string {
		return pick(r, []string{"pg_class"}, func(r *rand.Rand) string { return randText(r, 5) })
	}},
	{"b", "boolean", func(r *rand.Rand) *string {
		return pick(r, []string{"true"}, func(r *rand.Rand) string { return strconv.FormatBool(r.IntN(2) == 0) })
	}},
	{"d", "date", func(r *rand.Rand) *string {
		return pick(r, []string{"infinity", "-infinity", "4713-01-01 BC", "5874897-12-31", "0001-01-01 BC", "2000-01-01", "1970-01-01"},
			func(r *rand.Rand) string { return pgDate(randDate(r), "-01-02") })
	}},
	{"ts", "timestamp", func(r *rand.Rand) *string {
		return pick(r, []string{"infinity", "-infinity", "4713-01-01 00:00:00 BC", "294276-12-31 23:59:59.999999", "1969-12-31 23:59:59.999999", "10000-01-01"},
			func(r *rand.Rand) string { return randTimestamp(r, false) })
	}},
	{"tstz", "timestamptz", func(r *rand.Rand) *string {
		return pick(r, []string{"infinity", "-infinity", "4713-01-01 00:00:00+00 BC", "294276-12-31 23:59:59.999999+00", "1970-01-01 00:00:00.000001+00"},
			func(r *rand.Rand) string { return randTimestamp(r, true) })
	}},
	{"u", "uuid", func(r *rand.Rand) *string {
		return pick(r, []string{"00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"}, func(r *rand.Rand) string {
			var b [16]byte
			binary.BigEndian.PutUint64(b[:], r.Uint64())
			binary.BigEndian.PutUint64(b[8:], r.Uint64())
			return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
		})
	}},
	{"by", "bytea", func(r *rand.Rand) *string {
		return pick(r, []string{`\x`, `\x00`}, func(r *rand.Rand) string {
			b := make([]byte, r.IntN(20))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
			return fmt.Sprintf(`\x%x`, b)
		})
	}},
	{"js", "json", func(r *rand.Rand) *string {
		return pick(r, []string{`{"a":1,"a":2}`, `"x"`, `null`, `[]`, `{}`}, func(r *rand.Rand) string { return randJSON(r, 0) })
	}},
	{"jb", "jsonb", func(r *rand.Rand) *string {
		return pick(r, []string{`{"b":1,"a":2}`, `1e300`, `[1.0, -0]`}, func(r *rand.Rand) string { return randJSON(r, 0) })
	}},
	{"mood", "decode_mood", func(r *rand.Rand) *string {
		return pick(r, []string{"happy"}, func(r *rand.Rand) string { return []string{"sad", "ok", "happy"}[r.IntN(3)] })
	}},
	{"iv", "interval", func(r *rand.Rand) *string {
		return pick(r, []string{"0", "-178000000 years"}, func(r *rand.Rand) string { return fmt.Sprintf("%d days %d seconds", r.IntN(1000)-500, r.IntN(100000)) })
	}},
	{"ai4", "integer[]", func(r *rand.Rand) *string {
		return pick(r, []string{"{}", "{NULL}", "[0:1]={1,2}"}, func(r *rand.Rand) string {
			return randArray(r, func(r *rand.Rand) string { return strconv.Itoa(int(r.Int32())) })
		})
	}},
	{"atxt", "text[]", func(r *rand.Rand) *string {
		return pick(r, []string{"{}", `{""}`}, func(r *rand.Rand) string {
			return randArray(r, func(r *rand.Rand) string { return strconv.Quote(strings.ReplaceAll(randText(r, 4), `\`, "")) })
		})
	}},
	{"anum", "numeric(8,3)[]", func(r *rand.Rand) *string {
		return pick(r, []string{"{}", "{0,NULL,-0.5}"}, func(r *rand.Rand) string {
			return randArray(r, func(r *rand.Rand) string { return randNumeric(r, 5, 3) })
		})
	}},
	{"ach", "char(3)[]", func(r *rand.Rand) *string {
		return pick(r, []string{`{"a",""}`}, func(r *rand.Rand) string {
			return randArray(r, func(r *rand.Rand) string { return strconv.Quote(strings.ReplaceAll(randText(r, 2), `\`, "")) })
		})
	}},
	{"ad", "date[]", func(r *rand.Rand) *string {
		return pick(r, []string{"{infinity}", "{2000-01-01,NULL}"}, func(r *rand.Rand) string {
			return randArray(r, func(r *rand.Rand) string { return strconv.Quote(pgDate(randDate(r), "-01-02")) })
		})
	}},
	{"atstz", "timestamptz[]", func(r *rand.Rand) *string {
		return pick(r, []string{"{-infinity}"}, func(r *rand.Rand) string {
			return randArray(r, func(r *rand.Rand) string { return strconv.Quote(randTimestamp(r, true)) })
		})
	}},
	{"au", "uuid[]", func(r *rand.Rand) *string {
		return pick(r, []string{"{00000000-0000-0000-0000-000000000000,NULL}"}, func(r *rand.Rand) string { return "{}" })
	}},
	{"af4", "real[]", func(r *rand.Rand) *string {
		return pick(r, []string{"{NaN,Infinity,0.1}"}, func(r *rand.Rand) string {
			return randArray(r, func(r *rand.Rand) string { return strconv.FormatFloat(r.NormFloat64(), 'g', 7, 32) })
		})
	}},
	{"ajb", "jsonb[]", func(r *rand.Rand) *string {
		return pick(r, []string{`{"{\"a\": 1}",NULL}`}, func(r *rand.Rand) string { return "{}" })
	}},
	{"aby", "bytea[]", func(r *rand.Rand) *string {
		return pick(r, []string{`{"\\x00ff",NULL,"\\x"}`}, func(r *rand.Rand) string { return "{}" })
	}},
	{"ab", "boolean[]", func(r *rand.Rand) *string {
		return pick(r, []string{"{t,f,NULL}"}, func(r *rand.Rand) string { return "{}" })
	}},
}

func randArray(r *rand.Rand, elem func(r *rand.Rand) string) string {
	var parts []string
	for i := r.IntN(5); i > 0; i-- {
		if r.IntN(6) == 0 {
			parts = append(parts, "NULL")
		} else {
			parts = append(parts, elem(r))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// TestDecodeRandom stores random values of every type the direct decoders
// handle (NULLs, extremes, infinities, BC dates, huge numerics, non-ASCII
// text, padded char(n), arrays with NULLs) in PostgreSQL, reads them back
// as a migration does, and checks every value two ways, in every numeric
// mode: where the codec path (pgx's codec + Convert) gives a value, the
// direct path gives the same one; where it fails, the direct path declines
// (and the codec path then reports the error).
func TestDecodeRandom(t *testing.T) {
	conn, schema := convertTestDB(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TYPE "+pgx.Identifier{schema, "decode_mood"}.Sanitize()+" AS ENUM ('sad', 'ok', 'happy')"); err != nil {
		t.Fatal(err)
	}
	// The enum column's type is found on the search path.
	if _, err := conn.Exec(ctx, "SET search_path = "+pgx.Identifier{schema}.Sanitize()+", public"); err != nil {
		t.Fatal(err)
	}
	var defs, params []string
	for i, c := range decodeCases {
		defs = append(defs, pgx.Identifier{c.name}.Sanitize()+" "+c.typ)
		params = append(params, fmt.Sprintf("$%d::text::%s", i+1, c.typ))
	}
	table := schema + ".decode_random"
	qt := pgx.Identifier{schema, "decode_random"}.Sanitize()
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (%s)", qt, strings.Join(defs, ", "))); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(15, 2026))
	const rows = 400
	for range rows {
		args := make([]any, len(decodeCases))
		for i, c := range decodeCases {
			if v := c.gen(r); v != nil {
				args[i] = *v
			}
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%s)", qt, strings.Join(params, ", ")), args...); err != nil {
			t.Fatalf("insert %q: %v", args, err)
		}
	}
	cat, err := ReadCatalog(ctx, conn, []string{table})
	if err != nil {
		t.Fatal(err)
	}
	cols := cat.Table(table).Columns
	var sel []string
	for _, c := range cols {
		sel = append(sel, SelectExpr(c, "t"))
	}
	for _, mode := range []mappings.NumericMode{mappings.NumericDecimal, mappings.NumericDouble, mappings.NumericString} {
		t.Run(string(mode), func(t *testing.T) {
			n := &mappings.Node{Table: &mappings.Table{Name: "decode_random"}, Columns: cols}
			for range cols {
				n.Numeric = append(n.Numeric, mode)
			}
			q, err := conn.Query(ctx, fmt.Sprintf("SELECT %s FROM %s AS t", strings.Join(sel, ", "), qt))
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			d := newRowDecoder(n, q)
			direct := map[string]int{}
			for i, c := range d.cols {
				if c.fast == nil {
					t.Errorf("column %s (%s, oid %d): no direct decoder", c.col.Name, c.col.Type, c.oid)
				}
				_ = i
			}
			for q.Next() {
				raw := q.RawValues()
				for i := range d.cols {
					c := &d.cols[i]
					if raw[i] == nil || c.fast == nil {
						continue
					}
					want, werr := d.slow(c, raw[i])
					got, ok := c.fast(&d.arena, raw[i])
					switch {
					case werr == nil && !ok:
						t.Errorf("%s: the direct decoder declines %x, the codec path gives %#v", c.col.Name, raw[i], want)
					case werr != nil && ok:
						t.Errorf("%s: the direct decoder gives %#v for %x, the codec path fails: %v", c.col.Name, got, raw[i], werr)
					case ok && !sameValue(got, want):
						t.Errorf("%s: %x: direct %#v, codec path %#v", c.col.Name, raw[i], got, want)
					case ok:
						direct[c.col.Name]++
					}
				}
				// The row as a whole: decode agrees with the codec path; a
				// value the codec path refuses is read as transform.Invalid
				// (the document holding it is rejected), not an error.
				row, rerr := d.decode(raw)
				if rerr != nil {
					t.Fatalf("decode: %v", rerr)
				}
				for i := range d.cols {
					if raw[i] == nil {
						continue
					}
					want, werr := d.slow(&d.cols[i], raw[i])
					if werr != nil {
						if _, invalid := row[i].(transform.Invalid); !invalid {
							t.Errorf("%s: decode gives %#v for a value the codec path refuses (%v)", d.cols[i].col.Name, row[i], werr)
						}
						continue
					}
					if !sameValue(row[i], want) {
						t.Errorf("%s: decode gives %#v, the codec path %#v", d.cols[i].col.Name, row[i], want)
					}
				}
			}
			if err := q.Err(); err != nil {
				t.Fatal(err)
			}
			for _, c := range cols {
				if direct[c.Name] < rows/2 {
					t.Errorf("column %s: only %d of %d values decoded directly", c.Name, direct[c.Name], rows)
				}
			}
		})
	}
}

// FuzzDecodeWire feeds arbitrary bytes to every direct decoder: whenever it
// accepts them, pgx's codec and Convert must accept them too and give the
// same value.
func FuzzDecodeWire(f *testing.F) {
	type target struct {
		col mappings.Column
		oid uint32
	}
	targets := []target{
		{mappings.Column{Type: "numeric", TypeName: "numeric", Category: "N"}, pgtype.NumericOID},
		{mappings.Column{Type: "numeric(12,2)", TypeName: "numeric", Category: "N"}, pgtype.NumericOID},
		{mappings.Column{Type: "date", TypeName: "date", Category: "D"}, pgtype.DateOID},
		{mappings.Column{Type: "timestamp without time zone", TypeName: "timestamp", Category: "D"}, pgtype.TimestampOID},
		{mappings.Column{Type: "timestamp with time zone", TypeName: "timestamptz", Category: "D"}, pgtype.TimestamptzOID},
		{mappings.Column{Type: "uuid", TypeName: "uuid", Category: "U"}, pgtype.UUIDOID},
		{mappings.Column{Type: "bytea", TypeName: "bytea", Category: "U"}, pgtype.ByteaOID},
		{mappings.Column{Type: "real", TypeName: "float4", Category: "N"}, pgtype.Float4OID},
		{mappings.Column{Type: "integer[]", TypeName: "_int4", Category: "A", ElemTypeName: "int4", ElemCategory: "N"}, pgtype.Int4ArrayOID},
		{mappings.Column{Type: "numeric(6,2)[]", TypeName: "_numeric", Category: "A", ElemTypeName: "numeric", ElemCategory: "N"}, pgtype.NumericArrayOID},
		{mappings.Column{Type: "text[]", TypeName: "_text", Category: "A", ElemTypeName: "text", ElemCategory: "S"}, pgtype.TextArrayOID},
		{mappings.Column{Type: "jsonb", TypeName: "jsonb", Category: "U"}, pgtype.TextOID},
	}
	num := func(ndigits, weight, sign, dscale uint16, d ...uint16) []byte {
		b := binary.BigEndian.AppendUint16(nil, ndigits)
		b = binary.BigEndian.AppendUint16(b, weight)
		b = binary.BigEndian.AppendUint16(b, sign)
		b = binary.BigEndian.AppendUint16(b, dscale)
		for _, x := range d {
			b = binary.BigEndian.AppendUint16(b, x)
		}
		return b
	}
	for i := range targets {
		f.Add(uint8(i), num(2, 0, 0, 2, 12, 5000))
		f.Add(uint8(i), num(1, 0xFFFF, 0x4000, 6, 500))
		f.Add(uint8(i), num(0, 0, 0xC000, 0))
		f.Add(uint8(i), num(3, 2, 0, 0, 1, 0, 0))
		f.Add(uint8(i), binary.BigEndian.AppendUint32(nil, 0x7FFFFFFF))
		f.Add(uint8(i), binary.BigEndian.AppendUint64(nil, 0x8000000000000001))
		f.Add(uint8(i), []byte(`{"a":[1,2]}`))
		f.Add(uint8(i), []byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7, 255, 255, 255, 255})
	}
	m := pgtype.NewMap()
	f.Fuzz(func(t *testing.T, which uint8, src []byte) {
		tg := targets[int(which)%len(targets)]
		if len(src) > 96 || tg.oid == pgtype.NumericOID && len(src) >= 8 && int16(binary.BigEndian.Uint16(src[6:])) > 1000 {
			// pgx's codec takes quadratic time over a long numeric's
			// digits and display scale: keep the fuzzer fast.
			return
		}
		for _, mode := range []mappings.NumericMode{mappings.NumericDecimal, mappings.NumericDouble, mappings.NumericString} {
			c := decodeCol{col: tg.col, mode: mode, oid: tg.oid, fmt: pgx.BinaryFormatCode}
			c.fast = fastDecoder(&c.col, mode, tg.oid, pgx.BinaryFormatCode)
			if c.fast == nil {
				t.Fatalf("%s: no direct decoder", tg.col.Type)
			}
			got, ok := c.fast(&arena{}, src)
			if !ok {
				continue
			}
			d := &rowDecoder{m: m}
			want, err := d.slow(&c, src)
			if err != nil {
				t.Fatalf("%s %s: direct decoder gives %s for %x, codec path fails: %v", tg.col.Type, mode, short(got), src, err)
			}
			if !sameValue(got, want) {
				t.Fatalf("%s %s: %x: direct %s, codec path %s", tg.col.Type, mode, src, short(got), short(want))
			}
		}
	})
}

// TestArena checks that boxing through the arena is in effect and gives
// ordinary values that stay intact through garbage collections while the
// arena moves on to new blocks.
func TestArena(t *testing.T) {
	if !box.Works {
		t.Fatal("interfaces are not laid out as the arena assumes: it boxes the ordinary way")
	}
	var a arena
	var got, want []any
	for i := range 20000 {
		s := fmt.Sprintf("v%d-é", i)
		tm := time.Unix(int64(i)*86400, int64(i)).UTC()
		got = append(got, a.string([]byte(s)), a.decimal([]byte(strconv.Itoa(i)+".50")), a.time(tm), a.int32(int32(i*1000)),
			a.int64(int64(i)<<33), a.float64(float64(i)/3), a.uuid([]byte(fmt.Sprintf("%016d", i))), a.binary([]byte(s)))
		want = append(want, s, transform.Decimal(strconv.Itoa(i)+".50"), tm, int32(i*1000),
			int64(i)<<33, float64(i)/3, transform.UUID([]byte(fmt.Sprintf("%016d", i))), transform.Binary(s))
		arr := a.array(1 + i%5)
		for j := range arr {
			arr[j] = a.int64(int64(i)<<20 + int64(j))
		}
		wantArr := make(transform.Array, len(arr))
		for j := range wantArr {
			wantArr[j] = int64(i)<<20 + int64(j)
		}
		got, want = append(got, a.boxArray(arr)), append(want, wantArr)
		if i%5000 == 0 {
			runtime.GC()
		}
	}
	runtime.GC()
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("value %d: %#v, want %#v", i, got[i], want[i])
		}
	}
	if v := a.binary(nil); !reflect.DeepEqual(v, transform.Binary{}) {
		t.Errorf("empty bytea: %#v", v)
	}
	if v, ok := (&arena{}).boxArray((&arena{}).array(0)).(transform.Array); !ok || v == nil || len(v) != 0 {
		t.Errorf("empty array: %#v", v)
	}
	if arr := a.array(3); cap(append(arr, 1)) == cap(arr) {
		t.Errorf("an array shares its block past its length")
	}
	long := strings.Repeat("x", arenaMaxShare+1)
	if v := a.string([]byte(long)); v != long {
		t.Errorf("long string: %q", v)
	}
}

// TestNumericPlain holds appendNumericPlain, the one-pass writer, to
// appendNumericWire: numerics as PostgreSQL sends them (from random
// decimal texts: large, small, long fractions, trailing zeros, the
// integer or the fraction zero), which it must all take and write as the
// text they came from; and arbitrary wire bytes (groups over 9999,
// leading zero groups, negative and zero display scales, fractions the
// scale cuts, odd signs), where it must write what appendNumericWire
// writes or decline.
func TestNumericPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 4))
	check := func(src []byte) bool {
		got, ok := appendNumericPlain([]byte("x"), src)
		want, _, wok := appendNumericWire([]byte("x"), nil, src, -1)
		if !ok {
			if string(got) != "x" {
				t.Fatalf("%x: declined, but wrote %q", src, got)
			}
			return false
		}
		if !wok || string(got) != string(want) {
			t.Fatalf("%x: appendNumericPlain %q, appendNumericWire %q (ok %v)", src, got, want, wok)
		}
		return true
	}
	for range 100_000 {
		var s string
		switch r.IntN(4) {
		case 0:
			s = randDecimal(r, 30, r.IntN(20))
		case 1:
			s = "0." + strings.Repeat("0", r.IntN(12)) + strings.TrimPrefix(randDecimal(r, 6, 0), "-")
			if r.IntN(2) == 0 {
				s = "-" + s
			}
		case 2:
			s = randDecimal(r, 6, r.IntN(6)) + strings.Repeat("0", r.IntN(9))
			if !strings.Contains(s, ".") {
				s += "." + strings.Repeat("0", 1+r.IntN(5))
			}
		default:
			s = randDecimal(r, 12, 0) + strings.Repeat("0", r.IntN(12))
		}
		src := numericWire(s)
		if binary.BigEndian.Uint16(src) == 0 {
			continue // a zero: appendNumericWire's, with its display scale
		}
		if !check(src) {
			t.Fatalf("%q (%x): declined", s, src)
		}
		got, _ := appendNumericPlain(nil, src)
		if want := strings.TrimLeft(strings.TrimPrefix(s, "-"), "0"); strings.TrimLeft(strings.TrimPrefix(string(got), "-"), "0") != want {
			t.Fatalf("%q: wrote %q", s, got)
		}
	}
	took := 0
	for range 200_000 {
		if check(randNumericBytes(r, 8, 24)) {
			took++
		}
	}
	if took < 20_000 {
		t.Errorf("took %d of 200,000 arbitrary numerics", took)
	}
	t.Logf("took %d of 200,000 arbitrary numerics", took)
}
