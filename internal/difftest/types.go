package difftest

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// colType is a column type the generator can draw: its SQL spelling, what
// a mapping may do with it, and how to make its values (SQL literals).
type colType struct {
	SQL string // as written in CREATE TABLE
	Fam string // the family, for switches and statistics

	Key    bool // may be a primary key or a join key
	Order  bool // has a btree order: orderBy
	MinMax bool // min() and max() exist
	Sum    bool // sum() and avg() exist
	Int    int  // integer bits (16, 32, 64), 0 for other types
	Text   bool // text-like: pivots, text filters, expressions on strings
	Bool   bool
	// Exact is true when values go into documents unchanged by rounding
	// (no float, no sub-millisecond time): expressions may compare them.
	Exact bool

	maxKeys int // distinct key values the type has (0: plenty)

	value func(g *gen) string        // a non-NULL SQL literal
	key   func(g *gen, i int) string // the i-th distinct key value (Key types)
	elem  *colType                   // element type of an array
}

// lit quotes s as an SQL string literal (standard_conforming_strings on).
func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ident quotes an SQL identifier.
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// oddTexts are text values chosen to break things: empty, blanks,
// control characters, every plane of Unicode, quoting characters, the
// characters denorm escapes in ids, and strings that look like other
// things.
var oddTexts = []string{
	"", " ", "  padded  ", "a", "A", "Zz", "ünïcødé", "日本語テキスト", "emoji 😀🏳️‍🌈", "\x01\x02\x1f\x7f",
	"tab\there\nnewline\r\n", "quote ' double \" back \\ slash", "$dollar", "a.b.c", "-", "%", "%2D", "a-1",
	"NULL", "null", "true", "0", "-0", "1e400", "{", "[1]", "\u202eRTL", "zero\u200bwidth", "e\u0301", "\ufeffbom",
	"\U0010FFFF", "\uFFFD", "<xml/>", "_id", "$date", "line\u2028sep",
}

func (g *gen) text() string {
	switch g.weighted(5, 3, 1, 1) {
	case 0:
		return pick(g.rng, oddTexts...)
	case 1:
		return g.word()
	case 2:
		n := pick(g.rng, 100, 1000, 10000)
		if g.chance(0.1) {
			n = 200000
		}
		return strings.Repeat(pick(g.rng, "x", "é", "日", "ab "), n/3+1)
	default:
		return g.word() + pick(g.rng, " ", "-", "_", ".", "$", "\n") + g.word()
	}
}

func (g *gen) word() string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
	n := g.between(1, 8)
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteByte(letters[g.n(len(letters))])
	}
	return b.String()
}

// intType is smallint, integer or bigint.
func intType(g *gen, bits int) *colType {
	name := map[int]string{16: "smallint", 32: "integer", 64: "bigint"}[bits]
	lo := new(big.Int).Neg(new(big.Int).Lsh(big.NewInt(1), uint(bits-1)))
	hi := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(bits-1)), big.NewInt(1))
	bound := "" // the first key: a bound of the type, for some tables
	if g.chance(0.2) {
		bound = pick(g.rng, lo.String(), hi.String())
	}
	return &colType{
		SQL: name, Fam: name, Key: true, Order: true, MinMax: true, Sum: true, Int: bits, Exact: true,
		value: func(g *gen) string {
			switch g.weighted(6, 2, 1, 1) {
			case 0:
				return strconv.Itoa(g.between(-20, 100))
			case 1:
				return pick(g.rng, lo.String(), hi.String(), "0", "-1", "1")
			case 2:
				v := new(big.Int).Sub(hi, big.NewInt(int64(g.n(3))))
				return v.String()
			default:
				return strconv.FormatInt(int64(g.uint64()>>(65-bits))*pick(g.rng, int64(1), -1), 10)
			}
		},
		key: func(g *gen, i int) string {
			if i == 0 && bound != "" {
				return bound
			}
			return strconv.Itoa(i - 3)
		},
	}
}

func numericType(g *gen) *colType {
	prec, scale := 0, 0
	sqlName := "numeric"
	if g.chance(0.5) {
		prec = g.between(1, 30)
		scale = g.between(0, min(prec, 6))
		sqlName = fmt.Sprintf("numeric(%d,%d)", prec, scale)
	}
	fits := func(s string) string {
		if prec == 0 {
			return s
		}
		return "0"
	}
	return &colType{
		SQL: sqlName, Fam: "numeric", Key: true, Order: true, MinMax: true, Sum: true,
		value: func(g *gen) string {
			if prec > 0 {
				digits := prec - scale
				ip := ""
				for i := 0; i < g.n(digits+1); i++ {
					ip += strconv.Itoa(g.n(10))
				}
				if ip == "" {
					ip = "0"
				}
				fp := ""
				for i := 0; i < g.n(scale+1); i++ {
					fp += strconv.Itoa(g.n(10))
				}
				v := pick(g.rng, "", "-") + ip
				if fp != "" {
					v += "." + fp
				}
				if g.chance(0.1) {
					v = pick(g.rng, "'NaN'", "0", "-0", "0.000")
				}
				return v
			}
			switch g.weighted(4, 3, 1, 1, 1) {
			case 0:
				if g.open("numericzero") && g.chance(0.2) {
					return pick(g.rng, "0.0", "0.00", "-0.000") // zeros with a scale
				}
				return pick(g.rng, "0", "-0", "1.0", "1.00", "0.1", "123.4500", "-2.5", "1e20", "9007199254740993", "0.30000000000000004")
			case 1:
				return pick(g.rng, "'NaN'", "'Infinity'", "'-Infinity'", "1e300", "1e308", "1e309", "-1e309", "1.7976931348623157e308", "5e-324")
			case 2:
				return fits(strings.Repeat("9", 1000))
			case 3:
				if g.open("underflow") {
					return pick(g.rng, "1e-991", "-1e-400", "1e-330")
				}
				return "1e-300"
			default:
				v := fmt.Sprintf("%d.%03d", g.between(-1000, 1000), g.n(1000))
				if v == "0.000" && !g.open("numericzero") {
					v = "0"
				}
				return v
			}
		},
		key: func(g *gen, i int) string {
			v := strconv.Itoa(i - 3)
			if (scale > 0 || prec == 0) && (i != 3 || prec > 0 || g.open("numericzero")) {
				v += pick(g.rng, "", ".0", ".00")
			}
			return v
		},
	}
}

func floatType(real bool) *colType {
	name := "double precision"
	if real {
		name = "real"
	}
	return &colType{
		SQL: name, Fam: name, Order: true, MinMax: true, Sum: true,
		value: func(g *gen) string {
			switch g.weighted(5, 3, 2, 2) {
			case 0:
				return fmt.Sprintf("%d.%d", g.between(-100, 100), g.n(100))
			case 1:
				return pick(g.rng, "'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "0", "0.1")
			case 2:
				return binaryFloat(g, real)
			default:
				if real {
					return pick(g.rng, "1e-45", "3.4e38", "-3.4e38", "1.17549435e-38", "16777217")
				}
				return pick(g.rng, "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "9007199254740993", "-1.7976931348623157e308")
			}
		},
	}
}

// binaryFloat is a value of any bits of its type, exactly: m x 2^k with
// m as wide as the type's significand (24 or 53 bits) and k over its
// whole range, subnormals included, and a power of two (m = 1) a third of
// the time, where shortest decimals can tie (a real's 2^-12 was written
// as 0.00024414063, PostgreSQL prints 0.00024414062), an even m a sixth
// (a midpoint to a neighbour may be a shorter decimal). The product of the
// doubles m and 2^k is exact, and so is the cast of a real's to real.
func binaryFloat(g *gen, real bool) string {
	bits, lo, hi, typ := 53, -1074, 971, "float8"
	if real {
		bits, lo, hi, typ = 24, -149, 104, "real"
	}
	m := int64(1)
	if !g.chance(1.0 / 3) {
		m = int64(g.r.Uint64() >> (64 - bits))
		m |= 1 // not a power of two in disguise, and never 0
		if g.chance(0.25) {
			// an even significand, whose shorter decimal may sit on the
			// midpoint to a neighbour: strconv takes it, PostgreSQL's
			// Ryū does not (-128878784::real is -1.28878784e+08)
			m = m&^1 | 2
		}
	}
	if g.chance(0.5) {
		m = -m
	}
	return fmt.Sprintf("(%d * power(2::float8, %d))::%s", m, g.between(lo, hi), typ)
}

func textType(g *gen) *colType {
	t := &colType{Fam: "text", Key: true, Order: true, MinMax: true, Text: true, Exact: true}
	switch g.weighted(4, 2, 2, 1, 1) {
	case 0:
		t.SQL = "text"
		t.value = func(g *gen) string { return lit(g.text()) }
	case 1:
		n := pick(g.rng, 1, 3, 20, 300)
		t.SQL, t.Fam = fmt.Sprintf("varchar(%d)", n), "varchar"
		t.value = func(g *gen) string { return lit(truncRunes(g.text(), n)) }
	case 2:
		n := pick(g.rng, 1, 2, 5, 12)
		t.SQL, t.Fam = fmt.Sprintf("char(%d)", n), "char"
		t.value = func(g *gen) string { return lit(truncRunes(g.text(), n)) }
		t.key = func(g *gen, i int) string {
			s := truncRunes(keyText(i), n)
			if g.chance(0.3) && len([]rune(s)) < n {
				s += " "
			}
			return lit(s)
		}
	case 3:
		t.SQL, t.Fam = "name", "name"
		t.value = func(g *gen) string { return lit(truncBytes(g.text(), 63)) }
	default:
		if !g.citext {
			t.SQL = "text"
			t.value = func(g *gen) string { return lit(g.text()) }
			break
		}
		t.SQL, t.Fam = "citext", "citext"
		t.value = func(g *gen) string { return lit(g.text()) }
		t.key = func(g *gen, i int) string {
			// distinct when case is folded; spelled in either case
			s := strings.ToLower(keyText(i + 26*(i/26)))
			if g.chance(0.5) {
				s = strings.ToUpper(s)
			}
			return lit(s)
		}
	}
	if t.key == nil {
		size := 1 << 30
		if strings.HasPrefix(t.SQL, "varchar(") {
			size, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(t.SQL, "varchar("), ")"))
		}
		t.key = func(g *gen, i int) string { return lit(truncRunes(keyText(i), size)) }
	}
	if strings.HasPrefix(t.SQL, "char(") || strings.HasPrefix(t.SQL, "varchar(") {
		// short types hold few distinct keys: keyText keeps the first
		// characters distinct.
		t.Key = !strings.HasPrefix(t.SQL, "char(1)") && !strings.HasPrefix(t.SQL, "varchar(1)") && !strings.HasPrefix(t.SQL, "char(2)")
	}
	return t
}

// keyText is the i-th text key: distinct in its first three characters,
// with the odd characters keys meet (a '-' the bucket ids escape, a '%',
// unicode, a blank).
func keyText(i int) string {
	const first = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789éü日-%."
	r := []rune(first)
	s := string(r[i%len(r)]) + string(r[(i/len(r))%len(r)])
	switch i % 7 {
	case 1:
		s += "-1"
	case 2:
		s += "%2D"
	case 3:
		s += " x"
	case 4:
		s += "ñ"
	}
	return s
}

func truncRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}

// truncBytes cuts s to at most n bytes, at a character boundary.
func truncBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func boolType() *colType {
	return &colType{SQL: "boolean", Fam: "boolean", Order: true, Bool: true, Exact: true,
		value: func(g *gen) string { return pick(g.rng, "true", "false") }}
}

func (g *gen) year() int {
	switch g.weighted(6, 2, 1, 1, 1) {
	case 0:
		return g.between(1970, 2100)
	case 1:
		return g.between(1, 1969)
	case 2:
		return g.between(10000, 200000)
	case 3:
		return -g.between(1, 4712) // BC
	default:
		return pick(g.rng, 1, 1582, 1900, 9999, 10000)
	}
}

func yearText(y int) (string, string) {
	if y <= 0 {
		return fmt.Sprintf("%04d", -y+1), " BC"
	}
	return fmt.Sprintf("%04d", y), ""
}

func (g *gen) dateText() string {
	y, bc := yearText(g.year())
	return fmt.Sprintf("%s-%02d-%02d%s", y, g.between(1, 12), g.between(1, 28), bc)
}

func (g *gen) timeText(sub bool) string {
	s := fmt.Sprintf("%02d:%02d:%02d", g.n(24), g.n(60), g.n(60))
	if g.chance(0.5) {
		s += fmt.Sprintf(".%03d", g.n(1000))
		if sub && g.chance(0.6) {
			s += fmt.Sprintf("%03d", g.n(1000))
		}
	}
	return s
}

func dateType(g *gen) *colType {
	inf := ""
	if g.open("infkey") && g.chance(0.3) {
		inf = pick(g.rng, "infinity", "-infinity")
	}
	return &colType{SQL: "date", Fam: "date", Key: true, Order: true, MinMax: true, Exact: true,
		value: func(g *gen) string {
			if g.chance(0.1) {
				return pick(g.rng, "'infinity'", "'-infinity'", "'5874897-12-31'", "'4713-01-01 BC'")
			}
			return lit(g.dateText())
		},
		key: func(g *gen, i int) string {
			if i == 0 && inf != "" {
				return lit(inf)
			}
			return lit(fmt.Sprintf("%04d-01-%02d", 1900+i/28, 1+i%28))
		},
	}
}

func timestampType(g *gen, tz bool) *colType {
	inf := ""
	if g.open("infkey") && g.chance(0.3) {
		inf = pick(g.rng, "infinity", "-infinity")
	}
	name := "timestamp"
	if tz {
		name = "timestamptz"
	}
	return &colType{SQL: name, Fam: name, Key: true, Order: true, MinMax: true,
		value: func(g *gen) string {
			if g.chance(0.1) {
				return pick(g.rng, "'infinity'", "'-infinity'", "'294276-12-31 23:59:59.999'", "'4713-01-01 00:00:00 BC'")
			}
			y, bc := yearText(g.year())
			s := fmt.Sprintf("%s-%02d-%02d %s", y, g.between(1, 12), g.between(1, 28), g.timeText(g.open("submillis")))
			if tz {
				s += pick(g.rng, "+00", "+05:30", "-11", "+14")
			}
			return lit(s + bc)
		},
		key: func(g *gen, i int) string {
			if i == 0 && inf != "" {
				return lit(inf)
			}
			s := fmt.Sprintf("2001-02-03 04:05:%02d.%03d", i%60, i/60)
			if tz {
				s += "+00"
			}
			return lit(s)
		},
	}
}

func timeType(tz bool) *colType {
	name := "time"
	if tz {
		name = "timetz"
	}
	return &colType{SQL: name, Fam: name, Key: !tz, Order: true, MinMax: true, Exact: true,
		value: func(g *gen) string {
			s := g.timeText(true)
			if g.chance(0.1) {
				s = pick(g.rng, "24:00:00", "00:00:00")
			}
			if tz {
				s += pick(g.rng, "+00", "+05:30", "-11")
			}
			return lit(s)
		},
		key: func(g *gen, i int) string { return lit(fmt.Sprintf("%02d:%02d:00", i/60%24, i%60)) },
	}
}

func intervalType() *colType {
	return &colType{SQL: "interval", Fam: "interval", Order: true, MinMax: true, Sum: true, Exact: true,
		value: func(g *gen) string {
			return lit(pick(g.rng, "1 year 2 mons -3 days 04:05:06.789", "-178000000 years", "1 microsecond", "0", "P1Y2M3DT4H5M6S",
				fmt.Sprintf("%d days %d seconds", g.between(-1000, 1000), g.n(86400)), "23:59:59.999999", "1 day -24 hours"))
		},
	}
}

func uuidType() *colType {
	return &colType{SQL: "uuid", Fam: "uuid", Key: true, Order: true, Exact: true,
		value: func(g *gen) string {
			if g.chance(0.2) {
				return lit(pick(g.rng, "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"))
			}
			return lit(fmt.Sprintf("%016x%016x", g.uint64(), g.uint64()))
		},
		key: func(g *gen, i int) string {
			s := fmt.Sprintf("%08x-0000-4000-8000-%012x", i*2654435761%(1<<32), i)
			if g.chance(0.3) {
				s = strings.ToUpper(s)
			}
			return lit(s)
		},
	}
}

func byteaType() *colType {
	return &colType{SQL: "bytea", Fam: "bytea", Key: true, Order: true, Exact: true,
		value: func(g *gen) string {
			switch g.n(3) {
			case 0:
				return lit(pick(g.rng, `\x`, `\x00`, `\x00ff7f80`, `\xdeadbeef`))
			case 1:
				return fmt.Sprintf("convert_to(%s, 'UTF8')", lit(g.text()))
			default:
				return fmt.Sprintf("decode(repeat('ab', %d), 'hex')", g.n(5000))
			}
		},
		key: func(g *gen, i int) string { return lit(fmt.Sprintf(`\x%04x`, i)) },
	}
}

// jsonValue is a random JSON text: odd keys ("$", ".", empty, "_id"),
// numbers at the edges of int32, int64 and double, nested arrays, deep
// nesting.
func (g *gen) jsonValue(depth int, dupKeys bool) string {
	if depth > 4 || g.chance(0.3) {
		switch g.weighted(3, 3, 1, 1, 2) {
		case 0:
			return pick(g.rng, "0", "-0", "1", "1.0", "-1.5", "2147483647", "2147483648", "9223372036854775807", "9223372036854775808",
				"12345678901234567890", "9007199254740993", "1e308", "1e400", "-1e400", "1e-400", "0.1", "5e-324", "1E2")
		case 1:
			b, _ := jsonString(g.text())
			return b
		case 2:
			return pick(g.rng, "true", "false", "null")
		case 3:
			return "[]"
		default:
			return "{}"
		}
	}
	if g.chance(0.4) {
		n := g.n(4)
		items := make([]string, n)
		for i := range items {
			items[i] = g.jsonValue(depth+1, dupKeys)
			if !g.nestedArrays && strings.HasPrefix(items[i], "[") {
				items[i] = "{\"a\":" + items[i] + "}"
			}
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	n := g.n(4)
	var parts []string
	used := map[string]bool{}
	for i := 0; i < n; i++ {
		k := pick(g.rng, "a", "b", "Key", "ünï", "x y", "_id", "n")
		if g.chance(0.08) {
			k = pick(g.rng, "$x", "a.b", "", "$", "\u0001")
		}
		if used[k] && !dupKeys {
			continue
		}
		used[k] = true
		ks, _ := jsonString(k)
		parts = append(parts, ks+":"+g.jsonValue(depth+1, dupKeys))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func jsonType(b bool) *colType {
	name := "json"
	if b {
		name = "jsonb"
	}
	return &colType{SQL: name, Fam: name, Order: b,
		value: func(g *gen) string {
			if g.chance(0.03) {
				// 101 levels: one more than a document may hold
				return lit(strings.Repeat(`{"a":`, 101) + "1" + strings.Repeat("}", 101))
			}
			return lit(g.jsonValue(0, !b))
		},
	}
}

// otherType is a type denorm writes as its text output (or that has no
// mapping of its own): network, money, bits, XML, ranges, geometry, text
// search, and the odd built-ins.
func otherType(g *gen) *colType {
	type o struct {
		sql    string
		key    bool
		order  bool
		minmax bool
		sum    bool
		vals   []string
	}
	os := []o{
		{"inet", true, true, true, false, []string{"192.168.0.1", "::1", "10.0.0.0/8", "2001:db8::1/64", "0.0.0.0"}},
		{"cidr", true, true, false, false, []string{"10.0.0.0/8", "192.168.0.0/24", "::/0"}},
		{"macaddr", true, true, false, false, []string{"08:00:2b:01:02:03", "ff:ff:ff:ff:ff:ff"}},
		{"macaddr8", false, true, false, false, []string{"08:00:2b:01:02:03:04:05"}},
		{"money", true, true, true, true, []string{"0", "-92233720368547758.08", "92233720368547758.07", "1.5", "$1,000.00"}},
		{"bit(4)", true, true, false, false, []string{"1010", "0000", "1111"}},
		{"varbit", false, true, false, false, []string{"", "1", "101010101010"}},
		{"xml", false, false, false, false, []string{"<a>x</a>", "text only", "<a b=\"1\"/><c/>", "<ü>&amp;</ü>"}},
		{"int4range", false, true, false, false, []string{"[1,5)", "empty", "(,)", "[-2147483648,0]"}},
		{"numrange", false, true, false, false, []string{"[1.5,2.5]", "(,0)"}},
		{"daterange", false, true, false, false, []string{"[2020-01-01,infinity)", "empty"}},
		{"tstzrange", false, true, false, false, []string{"[2020-01-01 00:00+00,2020-01-02 00:00+00)"}},
		{"int8multirange", false, true, false, false, []string{"{[1,2),[5,6)}", "{}"}},
		{"point", false, false, false, false, []string{"(1,2)", "(-0,1e308)", "(NaN,1)"}},
		{"line", false, false, false, false, []string{"{1,2,3}"}},
		{"lseg", false, false, false, false, []string{"[(0,0),(1,1)]"}},
		{"box", false, false, false, false, []string{"(1,1),(0,0)"}},
		{"path", false, false, false, false, []string{"[(0,0),(1,1),(2,0)]", "((0,0),(1,1))"}},
		{"polygon", false, false, false, false, []string{"((0,0),(1,1),(1,0))"}},
		{"circle", false, false, false, false, []string{"<(0,0),1>"}},
		{"tsvector", false, true, false, false, []string{"a fat cat", "'quoted word':1A b:2", ""}},
		{"tsquery", false, true, false, false, []string{"fat & rat", "!a | b"}},
		{"oid", true, true, true, false, []string{"0", "4294967295", "12"}},
		{"pg_lsn", true, true, true, false, []string{"0/0", "FFFFFFFF/FFFFFFFF", "16/B374D848"}},
		{`"char"`, true, true, true, false, []string{"a", "", "é", "Z"}},
		{"txid_snapshot", false, false, false, false, []string{"10:20:10,14,15"}},
	}
	x := os[g.n(len(os))]
	t := &colType{SQL: x.sql, Fam: strings.Trim(x.sql, `"`), Order: x.order, MinMax: x.minmax, Sum: x.sum, Exact: true,
		value: func(g *gen) string { return lit(pick(g.rng, x.vals...)) }}
	if x.key && len(x.vals) > 0 {
		switch x.sql {
		case "inet", "cidr":
			t.Key = true
			t.key = func(g *gen, i int) string { return lit(fmt.Sprintf("10.%d.%d.0/24", i/256%256, i%256)) }
		case "macaddr":
			t.Key = true
			t.key = func(g *gen, i int) string { return lit(fmt.Sprintf("08:00:2b:00:%02x:%02x", i/256%256, i%256)) }
		case "money":
			t.Key = true
			t.key = func(g *gen, i int) string { return lit(fmt.Sprintf("%d.%02d", i-3, i%100)) }
		case "oid", "pg_lsn":
			t.Key = true
			t.key = func(g *gen, i int) string {
				if x.sql == "pg_lsn" {
					return lit(fmt.Sprintf("%X/%X", i, i*7))
				}
				return lit(strconv.Itoa(i))
			}
		}
	}
	return t
}

// enumType creates an enum (odd labels included) in the case.
func enumType(g *gen) *colType {
	name := g.typeName("mood")
	labels := []string{"sad", "ok", "happy"}
	if g.chance(0.5) {
		labels = append(labels, "with space", "ünï", "a.b", "$x", "")
	}
	var quoted []string
	for _, l := range labels {
		quoted = append(quoted, lit(l))
	}
	g.c.Types = append(g.c.Types, fmt.Sprintf("CREATE TYPE %s AS ENUM (%s);", ident(name), strings.Join(quoted, ", ")))
	return &colType{SQL: ident(name), Fam: "enum", Key: true, Order: true, MinMax: true, Exact: true, maxKeys: len(labels),
		value: func(g *gen) string { return lit(pick(g.rng, labels...)) },
		key: func(g *gen, i int) string {
			return lit(labels[i%len(labels)])
		},
	}
}

// compositeType creates a composite type of two fields in the case.
func compositeType(g *gen) *colType {
	name := g.typeName("pair")
	g.c.Types = append(g.c.Types, fmt.Sprintf("CREATE TYPE %s AS (a integer, \"B c\" text);", ident(name)))
	return &colType{SQL: ident(name), Fam: "composite", Order: true,
		value: func(g *gen) string {
			return fmt.Sprintf("ROW(%d, %s)::%s", g.between(-5, 5), lit(g.text()), ident(name))
		},
	}
}

// domainType creates a domain over a base type (a scalar, an array, or
// jsonb), with a check constraint the generator's values satisfy.
func domainType(g *gen, base *colType) *colType {
	name := g.typeName("dom")
	check := ""
	if base.Int > 0 && g.chance(0.5) {
		check = " CHECK (VALUE IS NULL OR VALUE >= -1000000000000)"
	}
	g.c.Types = append(g.c.Types, fmt.Sprintf("CREATE DOMAIN %s AS %s%s;", ident(name), base.SQL, check))
	d := *base
	d.SQL = ident(name)
	d.Fam = "domain/" + base.Fam
	if check != "" {
		inner := base.value
		d.value = func(g *gen) string {
			v := inner(g)
			if strings.HasPrefix(v, "-") && len(v) > 13 {
				return "-999"
			}
			return v
		}
		innerKey := base.key
		d.key = func(g *gen, i int) string {
			v := innerKey(g, i)
			if strings.HasPrefix(v, "-") && len(v) > 13 {
				return "-999"
			}
			return v
		}
	}
	return &d
}

// arrayType is an array of elem: empty, with NULLs, with a lower bound
// other than 1 (open class lowerbound), two-dimensional.
func arrayType(elem *colType) *colType {
	t := &colType{SQL: elem.SQL + "[]", Fam: "array/" + elem.Fam, Order: elem.Order, elem: elem,
		value: func(g *gen) string {
			n := g.n(4)
			items := make([]string, n)
			for i := range items {
				if g.chance(0.15) {
					items[i] = "NULL"
				} else {
					items[i] = elem.value(g)
				}
			}
			arr := "ARRAY[" + strings.Join(items, ", ") + "]::" + elem.SQL + "[]"
			if n == 0 {
				arr = "'{}'::" + elem.SQL + "[]"
			}
			switch g.weighted(8, 1, 1) {
			case 1:
				if g.open("lowerbound") && n > 0 {
					// the same elements from index 5 (or -2)
					lb := pick(g.rng, 5, -2, 0)
					return fmt.Sprintf("('[%d:%d]=' || (%s)::text)::%s[]", lb, lb+n-1, arr, elem.SQL)
				}
			case 2:
				if n > 0 {
					// two dimensions: rejects the row
					return "ARRAY[" + arr + ", " + arr + "]"
				}
			}
			return arr
		},
	}
	return t
}
