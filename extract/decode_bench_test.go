package extract

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/denorm/denorm/mappings"
)

// The micro-benchmarks of the direct decoders: one per conversion, on
// wire bytes as PostgreSQL sends them (numerics by numericWire, which lays
// them out as PostgreSQL's numeric_send does; the other types by pgx's
// codecs, whose binary format is the server's). Each op decodes one value:
// ns/op is the cost per value, and allocs/value counts the allocations
// per value including the arena's shared blocks (a fraction: one block
// per 128 values, or per 8 KiB of text).
//
//	go test -run '^$' -bench BenchmarkDecode -benchmem ./extract/

// numericWire is numeric_send's binary form of the decimal text s ("-12.50",
// "NaN", "Infinity", "-Infinity"): digit count, weight, sign, display scale,
// then the base-10000 digits without leading or trailing zero digits.
func numericWire(s string) []byte {
	var sign uint16
	switch s {
	case "NaN":
		sign = numericNaN
	case "Infinity":
		sign = numericPosInf
	case "-Infinity":
		sign = numericNegInf
	}
	put := func(ndigits, weight int, sign uint16, dscale int, d []uint16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(ndigits))
		b = binary.BigEndian.AppendUint16(b, uint16(int16(weight)))
		b = binary.BigEndian.AppendUint16(b, sign)
		b = binary.BigEndian.AppendUint16(b, uint16(int16(dscale)))
		for _, x := range d {
			b = binary.BigEndian.AppendUint16(b, x)
		}
		return b
	}
	if sign != 0 {
		return put(0, 0, sign, 0, nil)
	}
	if strings.HasPrefix(s, "-") {
		sign = 0x4000
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	dscale := len(frac)
	intPart = strings.Repeat("0", (4-len(intPart)%4)%4) + intPart
	frac += strings.Repeat("0", (4-len(frac)%4)%4)
	all := intPart + frac
	var d []uint16
	for i := 0; i < len(all); i += 4 {
		var g uint16
		for _, c := range all[i : i+4] {
			g = g*10 + uint16(c-'0')
		}
		d = append(d, g)
	}
	weight := len(intPart)/4 - 1
	for len(d) > 0 && d[0] == 0 {
		d = d[1:]
		weight--
	}
	for len(d) > 0 && d[len(d)-1] == 0 {
		d = d[:len(d)-1]
	}
	if len(d) == 0 {
		return put(0, 0, 0, dscale, nil)
	}
	return put(len(d), weight, sign, dscale, d)
}

// randDecimal is a random decimal text with up to intDigits digits before
// the point and exactly fracDigits after it.
func randDecimal(r *rand.Rand, intDigits, fracDigits int) string {
	var b strings.Builder
	if r.IntN(4) == 0 {
		b.WriteByte('-')
	}
	n := 1 + r.IntN(intDigits)
	for i := range n {
		d := byte('0' + r.IntN(10))
		if i == 0 && n > 1 && d == '0' {
			d = '1'
		}
		b.WriteByte(d)
	}
	if fracDigits > 0 {
		b.WriteByte('.')
		for range fracDigits {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	return b.String()
}

type benchCase struct {
	name string
	col  mappings.Column
	mode mappings.NumericMode
	oid  uint32
	gen  func(r *rand.Rand) []byte
}

func numericCol(typ string) mappings.Column {
	return mappings.Column{Type: typ, TypeName: "numeric", Category: "N"}
}

func encodeWire(m *pgtype.Map, oid uint32, v any) []byte {
	b, err := m.Encode(oid, pgx.BinaryFormatCode, v, nil)
	if err != nil {
		panic(fmt.Sprintf("encode %T as %d: %v", v, oid, err))
	}
	return b
}

func benchCases() []benchCase {
	m := pgtype.NewMap()
	specials := []string{"NaN", "Infinity", "-Infinity"}
	cases := []benchCase{}
	for _, mode := range []mappings.NumericMode{mappings.NumericDouble, mappings.NumericDecimal, mappings.NumericString} {
		num := func(name, typ string, gen func(r *rand.Rand) string) {
			cases = append(cases, benchCase{name: "numeric_" + string(mode) + "/" + name, col: numericCol(typ), mode: mode, oid: pgtype.NumericOID,
				gen: func(r *rand.Rand) []byte { return numericWire(gen(r)) }})
		}
		num("15_2", "numeric(15,2)", func(r *rand.Rand) string { return randDecimal(r, 13, 2) })
		num("10_0", "numeric(10,0)", func(r *rand.Rand) string { return randDecimal(r, 10, 0) })
		num("19_4", "numeric(19,4)", func(r *rand.Rand) string { return randDecimal(r, 15, 4) })
		if mode == mappings.NumericDecimal {
			// at most 34 digits: more is no Decimal128 (the codec path
			// reports it)
			num("34_10", "numeric(34,10)", func(r *rand.Rand) string { return randDecimal(r, 24, 10) })
		} else {
			num("38_10", "numeric(38,10)", func(r *rand.Rand) string { return randDecimal(r, 28, 10) })
			num("big", "numeric", func(r *rand.Rand) string { return randDecimal(r, 60, 20) })
		}
		num("special", "numeric", func(r *rand.Rand) string { return specials[r.IntN(len(specials))] })
	}
	add := func(name string, col mappings.Column, oid uint32, gen func(r *rand.Rand) []byte) {
		cases = append(cases, benchCase{name: name, col: col, oid: oid, gen: gen})
	}
	add("int2", mappings.Column{Type: "smallint", TypeName: "int2", Category: "N"}, pgtype.Int2OID,
		func(r *rand.Rand) []byte { return encodeWire(m, pgtype.Int2OID, int16(r.IntN(60000)-30000)) })
	add("int4", mappings.Column{Type: "integer", TypeName: "int4", Category: "N"}, pgtype.Int4OID,
		func(r *rand.Rand) []byte { return encodeWire(m, pgtype.Int4OID, int32(r.Uint32())) })
	add("int8", mappings.Column{Type: "bigint", TypeName: "int8", Category: "N"}, pgtype.Int8OID,
		func(r *rand.Rand) []byte { return encodeWire(m, pgtype.Int8OID, int64(r.Uint64())) })
	add("float4", mappings.Column{Type: "real", TypeName: "float4", Category: "N"}, pgtype.Float4OID,
		func(r *rand.Rand) []byte { return encodeWire(m, pgtype.Float4OID, float32(r.NormFloat64()*1e4)) })
	add("float8", mappings.Column{Type: "double precision", TypeName: "float8", Category: "N"}, pgtype.Float8OID,
		func(r *rand.Rand) []byte { return encodeWire(m, pgtype.Float8OID, r.NormFloat64()*1e4) })
	add("bool", mappings.Column{Type: "boolean", TypeName: "bool", Category: "B"}, pgtype.BoolOID,
		func(r *rand.Rand) []byte { return encodeWire(m, pgtype.BoolOID, r.IntN(2) == 0) })
	add("date", mappings.Column{Type: "date", TypeName: "date", Category: "D"}, pgtype.DateOID,
		func(r *rand.Rand) []byte { return encodeWire(m, pgtype.DateOID, randDate(r)) })
	ts := func(r *rand.Rand) time.Time {
		return time.Unix(r.Int64N(4e9)-1e9, r.Int64N(1e6)*1000).UTC()
	}
	add("timestamp", mappings.Column{Type: "timestamp without time zone", TypeName: "timestamp", Category: "D"}, pgtype.TimestampOID,
		func(r *rand.Rand) []byte { return encodeWire(m, pgtype.TimestampOID, ts(r)) })
	add("timestamptz", mappings.Column{Type: "timestamp with time zone", TypeName: "timestamptz", Category: "D"}, pgtype.TimestamptzOID,
		func(r *rand.Rand) []byte { return encodeWire(m, pgtype.TimestamptzOID, ts(r)) })
	word := func(r *rand.Rand, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + r.IntN(26))
		}
		return string(b)
	}
	add("bpchar_trim", mappings.Column{Type: "character(20)", TypeName: "bpchar", Category: "S"}, pgtype.BPCharOID,
		func(r *rand.Rand) []byte {
			w := word(r, 3+r.IntN(15))
			return []byte(w + strings.Repeat(" ", 20-len(w)))
		})
	add("bpchar_keep", mappings.Column{Type: "character(20)", TypeName: "bpchar", Category: "S", KeepPadding: true}, pgtype.BPCharOID,
		func(r *rand.Rand) []byte {
			w := word(r, 3+r.IntN(15))
			return []byte(w + strings.Repeat(" ", 20-len(w)))
		})
	add("varchar", mappings.Column{Type: "character varying(40)", TypeName: "varchar", Category: "S"}, pgtype.VarcharOID,
		func(r *rand.Rand) []byte { return []byte(word(r, 5+r.IntN(30))) })
	add("text", mappings.Column{Type: "text", TypeName: "text", Category: "S"}, pgtype.TextOID,
		func(r *rand.Rand) []byte { return []byte(word(r, 5+r.IntN(60))) })
	add("uuid", mappings.Column{Type: "uuid", TypeName: "uuid", Category: "U"}, pgtype.UUIDOID,
		func(r *rand.Rand) []byte {
			var u [16]byte
			binary.BigEndian.PutUint64(u[:], r.Uint64())
			binary.BigEndian.PutUint64(u[8:], r.Uint64())
			return encodeWire(m, pgtype.UUIDOID, u)
		})
	add("bytea", mappings.Column{Type: "bytea", TypeName: "bytea", Category: "U"}, pgtype.ByteaOID,
		func(r *rand.Rand) []byte { return []byte(word(r, 32)) })
	add("int4_array", mappings.Column{Type: "integer[]", TypeName: "_int4", Category: "A", ElemTypeName: "int4", ElemCategory: "N"}, pgtype.Int4ArrayOID,
		func(r *rand.Rand) []byte {
			v := make([]int32, 1+r.IntN(8))
			for i := range v {
				v[i] = int32(r.IntN(100000))
			}
			return encodeWire(m, pgtype.Int4ArrayOID, v)
		})
	add("text_array", mappings.Column{Type: "text[]", TypeName: "_text", Category: "A", ElemTypeName: "text", ElemCategory: "S"}, pgtype.TextArrayOID,
		func(r *rand.Rand) []byte {
			v := make([]string, 1+r.IntN(5))
			for i := range v {
				v[i] = word(r, 3+r.IntN(10))
			}
			return encodeWire(m, pgtype.TextArrayOID, v)
		})
	add("jsonb", mappings.Column{Type: "jsonb", TypeName: "jsonb", Category: "U"}, pgtype.TextOID,
		func(r *rand.Rand) []byte {
			return []byte(fmt.Sprintf(`{"id": %d, "name": %q, "tags": ["%s", "%s"], "price": %s, "ok": true}`,
				r.IntN(1e6), word(r, 8), word(r, 4), word(r, 5), randDecimal(r, 5, 2)))
		})
	return cases
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchCases() {
		b.Run(bc.name, func(b *testing.B) {
			col := bc.col
			col.Name = "c"
			fast := fastDecoder(&col, bc.mode, bc.oid, pgx.BinaryFormatCode)
			if fast == nil {
				b.Fatalf("%s: no direct decoder", bc.name)
			}
			r := rand.New(rand.NewPCG(29, 2))
			vals := make([][]byte, 1024)
			for i := range vals {
				vals[i] = bc.gen(r)
			}
			var a arena
			for _, v := range vals {
				if _, ok := fast(&a, v); !ok {
					b.Fatalf("%s: the direct decoder declines %x", bc.name, v)
				}
			}
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				fast(&a, vals[i&1023])
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(b.N), "allocs/value")
		})
	}
}

// BenchmarkDecodeCached is BenchmarkDecode through the column's value
// cache (valueCache), for the types it serves, on values that repeat
// (drawn from 8) and values that do not (1024 distinct; the cache turns
// itself off): what a lookup costs against a decode.
func BenchmarkDecodeCached(b *testing.B) {
	for _, bc := range benchCases() {
		col := bc.col
		col.Name = "c"
		if !repeatsWorthCaching(&col, bc.oid) {
			continue
		}
		fast := fastDecoder(&col, bc.mode, bc.oid, pgx.BinaryFormatCode)
		for _, distinct := range []int{8, 1024} {
			b.Run(fmt.Sprintf("%s/distinct=%d", bc.name, distinct), func(b *testing.B) {
				r := rand.New(rand.NewPCG(29, 2))
				pool := make([][]byte, distinct)
				for i := range pool {
					pool[i] = bc.gen(r)
				}
				vals := make([][]byte, 1024)
				for i := range vals {
					vals[i] = pool[r.IntN(distinct)]
				}
				var a arena
				vc := new(valueCache)
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					vc.decode(fast, &a, vals[i&1023])
				}
				b.StopTimer()
				runtime.ReadMemStats(&ms1)
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(b.N), "allocs/value")
			})
		}
	}
}
