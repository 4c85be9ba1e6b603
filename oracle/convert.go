package oracle

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/shortreal"
	"github.com/denorm/denorm/mappings"
)

// quietNaN is the NaN the README's Types table names (bits
// 0x7ff8000000000000, PostgreSQL's own).
var quietNaN = math.Float64frombits(0x7ff8000000000000)

// unbuildable is a value the target cannot hold as the Types table says:
// the document (the row) is rejected, as migrate rejects it.
type unbuildable struct {
	path, msg string
}

func (e *unbuildable) Error() string {
	if e.path == "" {
		return e.msg
	}
	return fmt.Sprintf("field %q: %s", e.path, e.msg)
}

func reject(path, format string, args ...any) error {
	return &unbuildable{path: path, msg: fmt.Sprintf(format, args...)}
}

// value reads the JSON of one value of type vt: its BSON value, or nil
// for SQL NULL (a field then is left out).
func value(r *reader, vt valueType, path string) (any, error) {
	if r.null() {
		return nil, nil
	}
	if vt.array {
		return arrayValue(r, vt, path)
	}
	return scalar(r, vt, path)
}

func arrayValue(r *reader, vt valueType, path string) (any, error) {
	if r.peek() == '{' {
		// The query's marker of an array it cannot write (sqlValue).
		r.i++
		dims := ""
		if _, err := r.str(); err == nil && r.expect(':') == nil {
			dims, _ = r.str()
		}
		return nil, reject(path, "the %s value has the dimensions %s: only one-dimensional arrays starting at index 1 are written", vt.desc, dims)
	}
	if err := r.expect('['); err != nil {
		return nil, err
	}
	return r.elements(func(i int) (any, error) {
		if r.null() {
			return nil, nil
		}
		if r.peek() == '[' && vt.fam != famJSON {
			// (a json or jsonb element may be a JSON array: a
			// one-dimensional jsonb[] holding one is written as it is)
			return nil, reject(path, "the %s value is an array of arrays", vt.desc)
		}
		return scalar(r, vt, fmt.Sprintf("%s.%d", path, i))
	})
}

// scalar converts one non-NULL value of vt's family.
func scalar(r *reader, vt valueType, path string) (any, error) {
	switch vt.fam {
	case famInt32:
		s, err := r.number()
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, r.fail("%s is not a 32-bit integer", s)
		}
		return int32(n), nil
	case famInt64:
		s, err := r.number()
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, r.fail("%s is not a 64-bit integer", s)
		}
		return n, nil
	case famNumeric:
		s, _, err := r.scalarText()
		if err != nil {
			return nil, err
		}
		return numeric(s, vt.numeric, path)
	case famFloat4, famFloat8:
		s, _, err := r.scalarText()
		if err != nil {
			return nil, err
		}
		switch s {
		case "NaN":
			return quietNaN, nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		if vt.exactSum {
			return roundSum(s, vt, path)
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, r.fail("%s is not a float", s)
		}
		return f, nil
	case famBool:
		return r.boolean()
	case famJSON:
		return jsonValue(r, vt.numeric, path, 0)
	}
	s, err := r.str()
	if err != nil {
		return nil, err
	}
	if vt.exactSum && s == intervalOverflow {
		return nil, reject(path, "the interval sum is out of range (a field beyond its integer)")
	}
	switch vt.fam {
	case famBpchar:
		if !vt.keep {
			s = strings.TrimRight(s, " ")
		}
		return s, nil
	case famDate, famTimestamp, famTimestampTZ:
		return dateValue(s, vt, path)
	case famUUID:
		b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
		if err != nil || len(b) != 16 {
			return nil, r.fail("%q is not a uuid", s)
		}
		return bson.Binary{Subtype: bson.TypeBinaryUUID, Data: b}, nil
	case famBytea:
		h, ok := strings.CutPrefix(s, `\x`)
		if !ok {
			return nil, r.fail("bytea %q is not in hex format", s)
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			return nil, r.fail("bytea %q: %v", s, err)
		}
		return bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: b}, nil
	}
	return s, nil // text and every type written as its text
}

// numeric writes the decimal text s of a NUMERIC (or of a JSON number
// beyond a double) as mode says.
func numeric(s string, mode mappings.NumericMode, path string) (any, error) {
	switch mode {
	case mappings.NumericString:
		return s, nil
	case mappings.NumericDouble:
		switch s {
		case "NaN":
			return quietNaN, nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if math.IsInf(f, 0) {
			return nil, reject(path, "the number %s is out of range for a double (numeric: double); write it as decimal or string", short(s))
		}
		if err != nil && !math.IsInf(f, 0) && f != 0 {
			return nil, reject(path, "the number %s cannot be read as a double: %v", short(s), err)
		}
		if f == 0 && nonZero(s) {
			return nil, reject(path, "the number %s is too small for a double: it would be written as 0 (numeric: double); write it as decimal or string", short(s))
		}
		return f, nil
	}
	d, err := bson.ParseDecimal128(s)
	if err != nil {
		return nil, reject(path, "the number %s does not fit a Decimal128 (34 significant digits, exponent within ±6143); write it as string", short(s))
	}
	return d, nil
}

// nonZero reports whether the decimal text s has a non-zero digit in its
// significand.
func nonZero(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == 'e' || c == 'E' {
			return false
		}
		if c >= '1' && c <= '9' {
			return true
		}
	}
	return false
}

func short(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%s...%s (%d characters)", s[:28], s[len(s)-28:], len(s))
	}
	return s
}

// jsonValue converts a json/jsonb value (or an sql: field's to_json):
// objects keep their key order, a key given twice keeps its last value at
// its first place (as jsonb does); numbers as jsonNumber says.
func jsonValue(r *reader, mode mappings.NumericMode, path string, depth int) (any, error) {
	switch r.peek() {
	case '{':
		r.i++
		doc := bson.D{}
		var index map[string]int
		for first := true; ; first = false {
			ok, err := r.more('}', first)
			if err != nil {
				return nil, err
			}
			if !ok {
				return doc, nil
			}
			k, err := r.str()
			if err != nil {
				return nil, err
			}
			if err := r.expect(':'); err != nil {
				return nil, err
			}
			v, err := jsonValue(r, mode, path+"."+k, depth+1)
			if err != nil {
				return nil, err
			}
			if index == nil {
				index = map[string]int{}
			}
			if at, dup := index[k]; dup {
				doc[at].Value = v
				continue
			}
			index[k] = len(doc)
			doc = append(doc, bson.E{Key: k, Value: v})
		}
	case '[':
		r.i++
		return r.elements(func(i int) (any, error) { return jsonValue(r, mode, fmt.Sprintf("%s.%d", path, i), depth+1) })
	case '"':
		return r.str()
	case 't', 'f':
		return r.boolean()
	case 'n':
		if r.null() {
			return nil, nil
		}
	}
	s, err := r.number()
	if err != nil {
		return nil, err
	}
	return jsonNumber(s, mode, path)
}

// jsonNumber is the BSON value of a JSON number: an integer that fits 32
// bits is an int32, one that fits 64 bits an int64; any other number is a
// double when the double's shortest decimal text is the same number;
// otherwise (beyond int64, more digits than a double keeps, out of a
// double's range) it is written as the numeric mode says.
func jsonNumber(s string, mode mappings.NumericMode, path string) (any, error) {
	if !strings.ContainsAny(s, ".eE") {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return int32(n), nil
			}
			return n, nil
		}
	} else if f, err := strconv.ParseFloat(s, 64); err == nil {
		if sameNumber(s, strconv.FormatFloat(f, 'e', -1, 64)) {
			return f, nil
		}
	}
	return numeric(s, mode, path)
}

// sameNumber reports whether two decimal texts denote the same number.
// Each is reduced to its significant digits and the power of ten of the
// first of them; exponents too long for an int are never the same.
func sameNumber(a, b string) bool {
	da, ea, na, oka := decimalParts(a)
	db, eb, nb, okb := decimalParts(b)
	if !oka || !okb {
		return false
	}
	if da == "" || db == "" {
		return da == db // zeros: -0 and 0 are the same number
	}
	return da == db && ea == eb && na == nb
}

// decimalParts splits decimal text s into its significant digits (no
// leading or trailing zeros, "" for zero), the exponent of the first
// digit (the value is 0.d1d2... x 10^(exp)), and its sign.
func decimalParts(s string) (digits string, exp int, neg bool, ok bool) {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, e := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		x, err := strconv.Atoi(s[i+1:])
		if err != nil || x > 1<<30 || x < -(1<<30) {
			return "", 0, false, false
		}
		mant, e = s[:i], x
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	all := intPart + frac
	lead := 0
	for lead < len(all) && all[lead] == '0' {
		lead++
	}
	all = all[lead:]
	all = strings.TrimRight(all, "0")
	if all == "" {
		return "", 0, neg, true
	}
	// The first significant digit sits at position lead of intPart+frac;
	// the decimal point after len(intPart) digits.
	return all, e + len(intPart) - lead, neg, true
}

// roundSum rounds exactSum's text of a float sum (the exact decimal sum)
// or average ("sum/count") to the nearest value of vt's family: a real
// is rounded to 32 bits and written as the double of its shortest
// decimal, as real columns are. Beyond the family's range: unbuildable.
func roundSum(s string, vt valueType, path string) (any, error) {
	q := new(big.Rat)
	num, den, avg := strings.Cut(s, "/")
	if _, ok := q.SetString(num); !ok {
		return nil, fmt.Errorf("%s: %q is not an exact sum", path, s)
	}
	if avg {
		d, ok := new(big.Rat).SetString(den)
		if !ok || d.Sign() == 0 {
			return nil, fmt.Errorf("%s: %q is not an exact average", path, s)
		}
		q.Quo(q, d)
	}
	if vt.fam == famFloat4 && !avg {
		f32, _ := q.Float32()
		if math.IsInf(float64(f32), 0) {
			return nil, reject(path, "the sum %s is out of range for a real", short(s))
		}
		f, err := strconv.ParseFloat(shortreal.Text(f32), 64)
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	f, _ := q.Float64()
	if math.IsInf(f, 0) {
		return nil, reject(path, "the sum %s is out of range for a double", short(s))
	}
	return f, nil
}
