package extract

// Type conversion: how each PostgreSQL column is selected (SelectExpr) and
// how the value pgx decodes is turned into a document value (Convert).
//
//	PostgreSQL                     selected as          document value (BSON)
//	smallint, integer              native               int32
//	bigint                         native               int64
//	numeric                        native               Decimal (Decimal128), float64 or string by NumericMode
//	real, double precision         native               float64 (NaN, ±Inf kept; real via its shortest decimal text)
//	text, varchar, char(n), name   native               string (char(n) without its blank padding, unless the
//	                                                    mapping says char: keep: trimChar)
//	citext                         ::text               string
//	boolean                        native               bool
//	date, timestamp, timestamptz   native               time.Time in UTC (timestamp without zone taken as UTC);
//	                                                    ±infinity is an error (a BSON date has no infinity)
//	uuid                           native               UUID (binary subtype 4)
//	bytea                          native               Binary (binary subtype 0)
//	json, jsonb                    ::text               Doc / Array / scalars, parsed here keeping key order
//	enums (category E)             ::text               string (the label)
//	every other type               ::text               string: PostgreSQL's text output (interval "1 day",
//	                                                    inet, money, xml, ranges, bit, time, composites,
//	                                                    domains, ...); it follows session settings such as
//	                                                    IntervalStyle and lc_monetary
//	one-dimensional arrays         native (the above)   Array, each element converted as above, NULL -> nil
//	  of other element types       ::text[]             Array of strings (json[]/jsonb[] elements parsed)
//	NULL                                                nil
//
// Arrays with more than one dimension (which pgx would silently flatten),
// and arrays whose subscripts do not start at 1 (whose bound pgx drops),
// are refused value by value (checkArrayDims): the row is read, and a
// document that would hold the value is rejected (transform.Invalid).
// NUMERIC in numeric mode double, and JSON numbers written as doubles,
// convert by transform.DecimalToDouble (refusing values without a
// double). Timestamps stay times here; transform writes them as dates or
// as text (timestamp: string).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// nativeTypes are the pg_type.typname values pgx decodes (binary protocol)
// into values Convert takes as they are.
var nativeTypes = map[string]bool{
	"int2": true, "int4": true, "int8": true,
	"float4": true, "float8": true,
	"numeric": true,
	"text":    true, "varchar": true, "bpchar": true, "name": true,
	"bool": true,
	"date": true, "timestamp": true, "timestamptz": true,
	"uuid":  true,
	"bytea": true,
}

// SelectExpr is the SQL expression that selects col so that Convert
// understands what pgx's rows.Values() returns for it. qualifier is a table
// alias, or empty. See the table at the top of this file.
func SelectExpr(col mappings.Column, qualifier string) string {
	ref := pgx.Identifier{col.Name}.Sanitize()
	if qualifier != "" {
		ref = pgx.Identifier{qualifier}.Sanitize() + "." + ref
	}
	if expr, ok := computedExpr(col, ref); ok {
		return expr
	}
	if col.Category == "A" && col.ElemTypeName != "" && col.TypeName == "_"+col.ElemTypeName {
		// Only true arrays (int2vector and oidvector are category A too).
		// Multi-dimensional values are refused by the decoder
		// (checkArrayDims), row by row.
		if nativeTypes[col.ElemTypeName] {
			return ref
		}
		return ref + "::pg_catalog._text"
	}
	if nativeTypes[col.TypeName] {
		return ref
	}
	// json/jsonb (keeps key order), enums, citext and every other type.
	return ref + "::pg_catalog.text"
}

// Convert turns v, a value rows.Values() returned for a column selected by
// SelectExpr, into a document value (see transform). SQL NULL is nil.
func Convert(col mappings.Column, v any, numeric mappings.NumericMode) (any, error) {
	if v == nil {
		return nil, nil
	}
	if x, ok := v.([]any); ok {
		if col.Category != "A" {
			return nil, unexpected(&col, v)
		}
		elem := mappings.Column{Name: col.Name, Type: strings.TrimSuffix(col.Type, "[]"), TypeName: col.ElemTypeName, Category: col.ElemCategory, KeepPadding: col.KeepPadding}
		out := make(transform.Array, len(x))
		for i, e := range x {
			if _, nested := e.([]any); nested {
				return nil, unexpected(&col, e)
			}
			c, err := convertScalar(&elem, e, numeric)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i+1, err)
			}
			out[i] = c
		}
		return out, nil
	}
	return convertScalar(&col, v, numeric)
}

func convertScalar(col *mappings.Column, v any, numeric mappings.NumericMode) (any, error) {
	switch col.TypeName {
	case "float4", "float8":
		if s, ok := v.(string); ok {
			return exactFloat(col, s) // an exact sum or average (exactSum)
		}
	case "interval":
		if v == intervalOverflow {
			return nil, fmt.Errorf("the sum of the interval values is out of range for an interval (months and days each within ±2^31, microseconds within ±2^63)")
		}
	case "json", "jsonb":
		switch x := v.(type) {
		case string:
			return parseJSONText([]byte(x), numeric)
		case []byte:
			return parseJSONText(x, numeric)
		case nil:
			return nil, nil
		}
		return nil, unexpected(col, v)
	case "numeric":
		switch x := v.(type) {
		case pgtype.Numeric:
			if !x.Valid {
				return nil, nil
			}
			return numericValue(col, numericText(col, &x), numeric)
		case string:
			return numericValue(col, x, numeric)
		case nil:
			return nil, nil
		}
		return nil, unexpected(col, v)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case int32:
		return x, nil
	case int16:
		return int32(x), nil
	case int64:
		return x, nil
	case float64:
		return x, nil
	case float32:
		return float32To64(x), nil
	case string:
		return trimChar(col, x), nil
	case bool:
		return x, nil
	case time.Time:
		return x.UTC(), nil
	case pgtype.InfinityModifier:
		return nil, infinityError(col, x)
	case [16]byte:
		return transform.UUID(x), nil
	case []byte:
		return transform.Binary(x), nil
	case pgtype.Numeric:
		// numeric values of a column whose catalog type is not numeric
		// (not produced by SelectExpr, but exact anyway).
		if !x.Valid {
			return nil, nil
		}
		return numericValue(col, numericText(col, &x), numeric)
	}
	return nil, unexpected(col, v)
}

// trimChar removes the blank padding of a char(n) value, as PostgreSQL's
// cast to text does (so char keys match text keys as in a join), unless
// the mapping keeps it.
func trimChar(col *mappings.Column, s string) string {
	if col.TypeName != "bpchar" || col.KeepPadding {
		return s
	}
	return strings.TrimRight(s, " ")
}

func typeDesc(col *mappings.Column) string {
	if col.Type != "" {
		return col.Type
	}
	if col.TypeName != "" {
		return col.TypeName
	}
	return "unknown type"
}

func unexpected(col *mappings.Column, v any) error {
	return fmt.Errorf("column type %s: cannot convert a value of Go type %T (select the column with extract.SelectExpr)", typeDesc(col), v)
}

func infinityError(col *mappings.Column, m pgtype.InfinityModifier) error {
	s := "infinity"
	if m < 0 {
		s = "-infinity"
	}
	return fmt.Errorf("%s value %s cannot be written: a BSON date has no infinity; filter such rows out or cast the column (e.g. to text) in the mapping", typeDesc(col), s)
}

// exactFloat rounds exactSum's text of a float sum (the exact decimal
// sum) or average (the exact sum, "/" and the count) to the nearest value
// of col's type, a real widened as float32To64 does. A value beyond the
// type's range is an error: the row is rejected.
func exactFloat(col *mappings.Column, s string) (any, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	bits := 64
	if col.TypeName == "float4" {
		bits = 32
	}
	what := "sum"
	var f float64
	if num, count, avg := strings.Cut(s, "/"); avg {
		what = "average"
		r, ok := new(big.Rat).SetString(num)
		d, dok := new(big.Rat).SetString(count)
		if !ok || !dok || d.Sign() == 0 {
			return nil, fmt.Errorf("%s: not an exact average: %q", typeDesc(col), abbrev(s))
		}
		f, _ = r.Quo(r, d).Float64() // an average is a double, of reals too
	} else {
		var err error
		if f, err = strconv.ParseFloat(s, bits); err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%s: not an exact sum: %q", typeDesc(col), abbrev(s))
		}
	}
	if math.IsInf(f, 0) {
		return nil, fmt.Errorf("the %s of the %s values, %s, is out of range for %s", what, typeDesc(col), abbrev(strings.Replace(s, "/", " / ", 1)), typeDesc(col))
	}
	if bits == 32 {
		return float32To64(float32(f)), nil
	}
	return f, nil
}

// float32To64 widens a real through its shortest decimal, so 0.1::real
// becomes 0.1 (what PostgreSQL prints), not 0.10000000149011612: the
// double nearest to the decimal d x 10^e that shortest32 finds.
func float32To64(f float32) float64 {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) || f == 0 {
		return float64(f)
	}
	b := math.Float32bits(f)
	d, e := shortest32(b &^ (1 << 31))
	v, exact := exactDouble(uint64(d), int(e)) // d has at most 9 digits
	if !exact {
		// The very small and very large reals: strconv rounds the decimal.
		var buf [24]byte
		text := strconv.AppendInt(append(strconv.AppendUint(buf[:0], uint64(d), 10), 'e'), int64(e), 10)
		var err error
		if v, err = strconv.ParseFloat(string(text), 64); err != nil {
			return float64(f)
		}
	}
	if b>>31 != 0 {
		v = -v
	}
	return v
}

// numericValue writes the exact decimal text s as the numeric mode says.
func numericValue(col *mappings.Column, s string, mode mappings.NumericMode) (any, error) {
	switch mode {
	case mappings.NumericDecimal, "":
		if err := transform.DecimalFits(s); err != nil {
			return nil, fmt.Errorf("%s value %s is %w; use numeric mode string", typeDesc(col), abbrev(s), err)
		}
		return transform.Decimal(s), nil
	case mappings.NumericString:
		return s, nil
	case mappings.NumericDouble:
		f, err := transform.DecimalToDouble(s)
		if err != nil {
			return nil, fmt.Errorf("%s value %s is %w; use numeric mode decimal or string", typeDesc(col), abbrev(s), err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("unknown numeric mode %q", mode)
}

func abbrev(s string) string {
	if len(s) > 60 {
		return s[:28] + "..." + s[len(s)-28:] + fmt.Sprintf(" (%d characters)", len(s))
	}
	return s
}

// numericText is the exact decimal text of n as PostgreSQL prints it
// ("12.50", "-3", "1000", "0.001", "NaN", "Infinity", "-Infinity"). pgx
// drops the scale of zero values (0.00 arrives as 0): the column's declared
// scale (numeric(p,s)) restores it; an unconstrained numeric zero is "0".
func numericText(col *mappings.Column, n *pgtype.Numeric) string {
	scale := -1
	if !n.NaN && n.InfinityModifier == 0 && n.Exp == 0 && (n.Int == nil || n.Int.Sign() == 0) {
		scale = numericScale(col.Type)
	}
	return formatNumeric(n, scale)
}

func formatNumeric(n *pgtype.Numeric, scale int) string {
	switch {
	case n.NaN:
		return "NaN"
	case n.InfinityModifier == pgtype.Infinity:
		return "Infinity"
	case n.InfinityModifier == pgtype.NegativeInfinity:
		return "-Infinity"
	}
	if n.Int == nil || n.Int.Sign() == 0 {
		return string(appendZero(nil, int(n.Exp), scale))
	}
	neg := n.Int.Sign() < 0
	var digits []byte
	if n.Int.IsInt64() {
		x := n.Int.Int64()
		u := uint64(x)
		if neg {
			u = uint64(-(x + 1)) + 1 // |x|, also for math.MinInt64
		}
		digits = strconv.AppendUint(make([]byte, 0, 20), u, 10)
	} else {
		digits = new(big.Int).Abs(n.Int).Append(nil, 10)
	}
	return string(appendDecimal(nil, neg, digits, int(n.Exp)))
}

// appendZero appends the text of a zero value with exponent exp, shown
// with at least scale fractional digits.
func appendZero(dst []byte, exp, scale int) []byte {
	if exp < 0 && -exp > scale {
		scale = -exp
	}
	dst = append(dst, '0')
	if scale > 0 {
		dst = append(dst, '.')
		for range scale {
			dst = append(dst, '0')
		}
	}
	return dst
}

// appendDecimal appends the text of the number digits x 10^exp (digits:
// decimal digits of a nonzero magnitude without leading zeros), negative
// when neg: the integer digits, then as many fractional digits as -exp.
func appendDecimal(dst []byte, neg bool, digits []byte, exp int) []byte {
	if neg {
		dst = append(dst, '-')
	}
	if exp >= 0 {
		dst = append(dst, digits...)
		for range exp {
			dst = append(dst, '0')
		}
		return dst
	}
	frac := -exp
	if len(digits) <= frac {
		dst = append(dst, '0', '.')
		for range frac - len(digits) {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-frac]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-frac:]...)
}

// numericScale is s of a "numeric(p,s)" (or "numeric(p,s)[]") type, or -1.
func numericScale(typ string) int {
	rest, ok := strings.CutPrefix(typ, "numeric(")
	if !ok {
		return -1
	}
	_, rest, ok = strings.Cut(rest, ",")
	if !ok {
		return 0 // numeric(p) has scale 0
	}
	s, _, ok := strings.Cut(rest, ")")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// parseJSONText parses JSON text into a document value keeping key order:
// objects become transform.Doc, arrays transform.Array, numbers int32 when
// they are integers that fit, else int64 when they fit, else float64 when
// a double holds them exactly (its shortest text is the same number); any
// other number - an integer beyond int64, a decimal with more digits than a
// double keeps, one out of a double's range - is written as the numeric
// mode says (Decimal128, string, or a double that may round). Strings,
// booleans and null (nil) as themselves. When a key repeats in an object
// (json, unlike jsonb, keeps duplicates) the last value wins, at the key's
// first position, as in jsonb.
func parseJSONText(text []byte, mode mappings.NumericMode) (any, error) {
	p := jsonParser{dec: json.NewDecoder(bytes.NewReader(text)), mode: mode}
	p.dec.UseNumber()
	v, err := p.value()
	if err != nil {
		return nil, fmt.Errorf("json: %w", err)
	}
	if _, err := p.dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("data after the JSON value")
		}
		return nil, fmt.Errorf("json: %w", err)
	}
	return v, nil
}

type jsonParser struct {
	dec  *json.Decoder
	mode mappings.NumericMode
}

func (p *jsonParser) value() (any, error) {
	tok, err := p.dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return p.token(tok)
}

func (p *jsonParser) token(tok json.Token) (any, error) {
	switch x := tok.(type) {
	case json.Delim:
		switch x {
		case '{':
			return p.object()
		case '[':
			arr := transform.Array{}
			for p.dec.More() {
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := p.dec.Token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %q", rune(x))
	case json.Number:
		return jsonNumber(string(x), p.mode)
	case string:
		return x, nil
	case bool:
		return x, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected token %T", tok)
}

func (p *jsonParser) object() (any, error) {
	doc := transform.Doc{}
	var index map[string]int // for large objects: key -> position
	for p.dec.More() {
		kt, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := kt.(string)
		if !ok {
			return nil, fmt.Errorf("object key is %T", kt)
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		pos := -1
		if index != nil {
			if p, ok := index[key]; ok {
				pos = p
			}
		} else {
			for i := range doc {
				if doc[i].Key == key {
					pos = i
					break
				}
			}
		}
		if pos >= 0 {
			doc[pos].Value = v
			continue
		}
		doc = append(doc, transform.Field{Key: key, Value: v})
		if index != nil {
			index[key] = len(doc) - 1
		} else if len(doc) == 32 {
			index = make(map[string]int, 64)
			for i := range doc {
				index[doc[i].Key] = i
			}
		}
	}
	if _, err := p.dec.Token(); err != nil { // '}'
		return nil, err
	}
	return doc, nil
}

// jsonNumber is the document value of JSON number s (see parseJSONText).
func jsonNumber(s string, mode mappings.NumericMode) (any, error) {
	isInt := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			isInt = false
			break
		}
	}
	if isInt {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return int32(n), nil
			}
			return n, nil
		}
	} else if f, err := strconv.ParseFloat(s, 64); err == nil && sameDecimal(s, strconv.FormatFloat(f, 'g', -1, 64)) {
		return f, nil
	}
	// Beyond int64, beyond a double's precision or range: exact, as the
	// numeric mode says.
	switch mode {
	case mappings.NumericString:
		return s, nil
	case mappings.NumericDouble:
		f, err := transform.DecimalToDouble(s)
		if err != nil {
			return nil, fmt.Errorf("number %s is %w; use numeric mode decimal or string", abbrev(s), err)
		}
		return f, nil
	}
	if err := transform.DecimalFits(s); err != nil {
		return nil, fmt.Errorf("number %s is %w; use numeric mode string", abbrev(s), err)
	}
	return transform.Decimal(s), nil
}

// sameDecimal reports whether the decimal numbers a and b (JSON or Go
// float syntax) have the same value.
func sameDecimal(a, b string) bool {
	na, ea, sa := normDecimal(a)
	nb, eb, sb := normDecimal(b)
	return na == nb && (na == "" || (ea == eb && sa == sb))
}

// normDecimal splits a decimal number into its significant digits (no
// leading or trailing zeros; "" for zero), the exponent of the last of
// them, and its sign.
func normDecimal(s string) (digits string, exp int, neg bool) {
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	} else {
		s = strings.TrimPrefix(s, "+")
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return s, 0, neg // not comparable: treated as different
		}
		exp, s = e, s[:i]
	}
	if i := strings.IndexByte(s, '.'); i >= 0 {
		exp -= len(s) - i - 1
		s = s[:i] + s[i+1:]
	}
	s = strings.TrimLeft(s, "0")
	for strings.HasSuffix(s, "0") {
		s = s[:len(s)-1]
		exp++
	}
	return s, exp, neg
}
