package extract

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	decdigits "github.com/denorm/denorm/internal/digits"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// rowDecoder turns the raw values of a result row into document values.
// Most column types (integers, floats, numeric, text and the other
// character types, boolean, date, timestamp, timestamptz, uuid, bytea,
// json/jsonb and every type selected as text, and one-dimensional arrays
// of these) are decoded straight from their wire bytes into the values
// Convert would return; every other column, and any value whose bytes are
// not what its format says, goes through pgx's codec for its type and then
// Convert, exactly as rows.Values() would. TestConvert and
// TestDecodeRandom hold the two paths to the same results. The direct path
// saves pgx's intermediate values (a big.Int per numeric, a map lookup and
// a scan plan per value) on the hot path of every migration.
//
// A rowDecoder is used by one goroutine. The rows it returns are carved out
// of shared blocks: they stay valid (and are never reused) as long as they
// are referenced.
type rowDecoder struct {
	node  *mappings.Node
	m     *pgtype.Map
	cols  []decodeCol
	width int
	// block holds rows not yet handed out; blockSize is the number of
	// rows of the next block.
	block     []any
	blockSize int
	// arena boxes the values.
	arena arena
}

// maxBlockRows is the number of rows allocated at a time, once a decoder
// has returned as many (blocks start small for queries of a few rows).
const maxBlockRows = 64

type decodeCol struct {
	col  mappings.Column
	mode mappings.NumericMode
	oid  uint32
	fmt  int16
	fast fastFunc
	// cache remembers the column's recent values, or is nil (see
	// valueCache).
	cache *valueCache
}

// fastFunc decodes one non-NULL value of a column straight from its wire
// bytes. ok is false when the bytes are not what it expects (then the codec
// path decides, and reports what is wrong).
type fastFunc func(a *arena, src []byte) (v any, ok bool)

func newRowDecoder(n *mappings.Node, rows pgx.Rows) *rowDecoder {
	d := &rowDecoder{node: n, m: rows.Conn().TypeMap(), width: len(n.Columns) + len(n.JoinKeyCols)}
	d.initCols(rows.FieldDescriptions())
	return d
}

// initCols sets up the decoding of each column the query returns as fds
// says.
func (d *rowDecoder) initCols(fds []pgconn.FieldDescription) {
	d.cols = make([]decodeCol, d.width)
	caches := 0
	for i := range d.cols {
		col, mode := keyColumn(d.node, i)
		c := decodeCol{col: col, mode: mode}
		if i < len(fds) {
			c.oid, c.fmt = fds[i].DataTypeOID, fds[i].Format
			c.fast = fastDecoder(&c.col, c.mode, c.oid, c.fmt)
			if c.fast != nil && repeatsWorthCaching(&c.col, c.oid) && caches < maxCachedColumns {
				c.cache = new(valueCache)
				caches++
			}
		}
		d.cols[i] = c
	}
}

// fastDecoder is the direct decoder of col arriving as oid in format, or
// nil when its values take the codec path.
func fastDecoder(col *mappings.Column, mode mappings.NumericMode, oid uint32, format int16) fastFunc {
	if textLike(col, oid) {
		// The same bytes in the text and the binary format.
		return scalarDecoder(col, mode, oid)
	}
	if format != pgx.BinaryFormatCode {
		return nil
	}
	if col.Category == "A" && col.ElemTypeName != "" && col.TypeName == "_"+col.ElemTypeName {
		return arrayDecoder(col, mode, oid)
	}
	return scalarDecoder(col, mode, oid)
}

// textLike reports whether values of col arrive as oid as their text in
// either format: the character types, and every column selected as text
// (json, jsonb, enums and the types Convert takes as PostgreSQL's text).
func textLike(col *mappings.Column, oid uint32) bool {
	return oid == pgtype.TextOID ||
		col.TypeName == "varchar" && oid == pgtype.VarcharOID ||
		col.TypeName == "bpchar" && oid == pgtype.BPCharOID ||
		col.TypeName == "name" && oid == pgtype.NameOID
}

func stringValue(a *arena, src []byte) (any, bool) { return a.string(src), true }

// scalarDecoder is the direct decoder of a scalar column of catalog type
// col.TypeName arriving in the binary format as oid, or nil.
func scalarDecoder(col *mappings.Column, mode mappings.NumericMode, oid uint32) fastFunc {
	switch {
	case oid == pgtype.TextOID:
		switch col.TypeName {
		case "json", "jsonb":
			p := &jsonFast{mode: mode}
			return func(a *arena, src []byte) (any, bool) {
				if v, ok := p.parse(a, src); ok {
					return v, true
				}
				v, err := parseJSONText(src, mode)
				return v, err == nil
			}
		case "numeric":
			return nil // not selected as text: let Convert report it
		case "float4", "float8":
			return nil // an exact sum or average (exactSum): Convert rounds it
		case "interval":
			return func(a *arena, src []byte) (any, bool) {
				if string(src) == intervalOverflow {
					return nil, false // Convert says why
				}
				return a.string(src), true
			}
		}
		return stringValue
	case col.TypeName == "bpchar" && oid == pgtype.BPCharOID && !col.KeepPadding:
		// Without its blank padding, as trimChar.
		return func(a *arena, src []byte) (any, bool) { return a.string(bytes.TrimRight(src, " ")), true }
	case textLike(col, oid):
		return stringValue
	case col.TypeName == "int2" && oid == pgtype.Int2OID:
		return func(a *arena, src []byte) (any, bool) {
			if len(src) != 2 {
				return nil, false
			}
			return a.int32(int32(int16(binary.BigEndian.Uint16(src)))), true
		}
	case col.TypeName == "int4" && oid == pgtype.Int4OID:
		return func(a *arena, src []byte) (any, bool) {
			if len(src) != 4 {
				return nil, false
			}
			return a.int32(int32(binary.BigEndian.Uint32(src))), true
		}
	case col.TypeName == "int8" && oid == pgtype.Int8OID:
		return func(a *arena, src []byte) (any, bool) {
			if len(src) != 8 {
				return nil, false
			}
			return a.int64(int64(binary.BigEndian.Uint64(src))), true
		}
	case col.TypeName == "float8" && oid == pgtype.Float8OID:
		return func(a *arena, src []byte) (any, bool) {
			if len(src) != 8 {
				return nil, false
			}
			return a.float64(math.Float64frombits(binary.BigEndian.Uint64(src))), true
		}
	case col.TypeName == "float4" && oid == pgtype.Float4OID:
		return func(a *arena, src []byte) (any, bool) {
			if len(src) != 4 {
				return nil, false
			}
			return a.float64(float32To64(math.Float32frombits(binary.BigEndian.Uint32(src)))), true
		}
	case col.TypeName == "bool" && oid == pgtype.BoolOID:
		return func(_ *arena, src []byte) (any, bool) {
			if len(src) != 1 {
				return nil, false
			}
			return src[0] == 1, true
		}
	case col.TypeName == "numeric" && oid == pgtype.NumericOID:
		return numericDecoder(col, mode)
	case col.TypeName == "date" && oid == pgtype.DateOID:
		return decodeDate
	case col.TypeName == "timestamp" && oid == pgtype.TimestampOID,
		col.TypeName == "timestamptz" && oid == pgtype.TimestamptzOID:
		return decodeTimestamp
	case col.TypeName == "uuid" && oid == pgtype.UUIDOID:
		return func(a *arena, src []byte) (any, bool) {
			if len(src) != 16 {
				return nil, false
			}
			return a.uuid(src), true
		}
	case col.TypeName == "bytea" && oid == pgtype.ByteaOID:
		return func(a *arena, src []byte) (any, bool) { return a.binary(src), true }
	}
	return nil
}

// numericDecoder decodes numeric's binary format (digit count, weight,
// sign, display scale, then base-10000 digits) as Convert does the value
// pgx decodes from the same bytes, without pgx's big.Int: in numeric
// modes decimal and string into the decimal text numericText gives, in
// mode double into the double of the digits (wireDouble), or of that text
// when wireDouble cannot round them. No allocation per value.
func numericDecoder(col *mappings.Column, mode mappings.NumericMode) fastFunc {
	zeroScale := numericScale(col.Type)
	var buf, digits []byte
	text := func(src []byte) bool {
		var ok bool
		if buf, ok = appendNumericPlain(buf[:0], src); ok {
			return true
		}
		buf, digits, ok = appendNumericWire(buf[:0], digits[:0], src, zeroScale)
		return ok
	}
	switch mode {
	case mappings.NumericDecimal, "":
		return func(a *arena, src []byte) (any, bool) {
			if !text(src) {
				return nil, false
			}
			// (DecimalFits keeps nothing of its argument: buf's bytes
			// need no copy; 34 bytes hold at most 34 digits.)
			if len(buf) > 34 && transform.DecimalFits(unsafe.String(&buf[0], len(buf))) != nil {
				return nil, false // numericValue says why
			}
			return a.decimal(buf), true
		}
	case mappings.NumericString:
		return func(a *arena, src []byte) (any, bool) {
			if !text(src) {
				return nil, false
			}
			return a.string(buf), true
		}
	case mappings.NumericDouble:
		return func(a *arena, src []byte) (any, bool) {
			if f, ok := wireDouble(src); ok {
				return a.float64(f), true
			}
			if !text(src) {
				return nil, false
			}
			// (DecimalToDouble keeps nothing of its argument.)
			f, err := transform.DecimalToDouble(unsafe.String(&buf[0], len(buf)))
			if err != nil {
				return nil, false // numericValue says why
			}
			return a.float64(f), true
		}
	}
	return nil // an unknown mode: Convert reports it
}

// Numeric signs on the wire.
const (
	numericNaN    = 0xC000
	numericPosInf = 0xD000
	numericNegInf = 0xF000
)

// appendNumericWire appends to dst the text of the numeric value src (in
// the binary format), following pgx's decoding of it into a
// pgtype.Numeric and numericText's printing of that, but for a zero,
// which keeps its display scale (at least zeroScale, the column's
// declared scale), as PostgreSQL prints it; pgx drops it (slow reads it
// from the wire too). digits is scratch space. ok is false for bytes
// pgx would refuse or that PostgreSQL never sends (a digit over 9999, only
// zero digits): the codec path handles those.
func appendNumericWire(dst, digits, src []byte, zeroScale int) (outDst, outDigits []byte, ok bool) {
	if len(src) < 8 {
		return dst, digits, false
	}
	ndigits := int(binary.BigEndian.Uint16(src))
	weight := int(int16(binary.BigEndian.Uint16(src[2:])))
	sign := binary.BigEndian.Uint16(src[4:])
	dscale := int(int16(binary.BigEndian.Uint16(src[6:])))
	switch sign {
	case numericNaN:
		return append(dst, "NaN"...), digits, true
	case numericPosInf:
		return append(dst, "Infinity"...), digits, true
	case numericNegInf:
		return append(dst, "-Infinity"...), digits, true
	}
	if ndigits == 0 {
		// a zero keeps its display scale (0.00 is not 0)
		return appendZero(dst, 0, max(dscale, zeroScale)), digits, true
	}
	if len(src) != 8+2*ndigits {
		return dst, digits, false
	}
	for i := range ndigits {
		g := binary.BigEndian.Uint16(src[8+2*i:])
		if g > 9999 {
			return dst, digits, false
		}
		if len(digits) == 0 {
			// no leading zeros
			switch {
			case g == 0:
				continue
			case g < 10:
				digits = append(digits, byte('0'+g))
				continue
			case g < 100:
				digits = append(digits, byte('0'+g/10), byte('0'+g%10))
				continue
			case g < 1000:
				digits = append(digits, byte('0'+g/100), byte('0'+g/10%10), byte('0'+g%10))
				continue
			}
		}
		digits = append(digits, byte('0'+g/1000), byte('0'+g/100%10), byte('0'+g/10%10), byte('0'+g%10))
	}
	if len(digits) == 0 {
		return dst, digits, false
	}
	exp := (weight - ndigits + 1) * 4
	if dscale > 0 {
		frac := (ndigits - weight - 1) * 4
		switch {
		case dscale > frac:
			for range dscale - frac {
				digits = append(digits, '0')
			}
			exp -= dscale - frac
		case dscale < frac:
			cut := frac - dscale
			if cut >= len(digits) {
				return dst, digits, false // truncated to zero: not from PostgreSQL
			}
			digits = digits[:len(digits)-cut]
			exp += cut
		}
	}
	// (pgx moves the trailing zeros of an integer into the exponent: the
	// text is the same.)
	return appendDecimal(dst, sign != 0, digits, exp), digits, true
}

// appendNumericPlain is appendNumericWire in one pass for the numerics
// PostgreSQL sends for a nonzero value: it writes the digit groups
// straight into the text (the integer part, then exactly dscale fraction
// digits) instead of gathering the digits first. It declines (false, dst
// unchanged) whatever appendNumericWire treats otherwise: a special value,
// a zero, a leading zero group, a group over 9999, a fraction without a
// display scale, or a value whose digits the display scale cuts away
// entirely; TestNumericPlain holds the two to the same text.
func appendNumericPlain(dst, src []byte) ([]byte, bool) {
	if len(src) < 10 {
		return dst, false
	}
	n := int(binary.BigEndian.Uint16(src))
	weight := int(int16(binary.BigEndian.Uint16(src[2:])))
	sign := binary.BigEndian.Uint16(src[4:])
	dscale := int(int16(binary.BigEndian.Uint16(src[6:])))
	if n == 0 || len(src) != 8+2*n || sign != 0 && sign != 0x4000 || dscale < 0 || dscale == 0 && n > weight+1 {
		return dst, false
	}
	g := src[8:]
	for i := range n {
		if binary.BigEndian.Uint16(g[2*i:]) > 9999 {
			return dst, false
		}
	}
	first := int(binary.BigEndian.Uint16(g))
	if first == 0 {
		return dst, false
	}
	// The first group's leading digit must be printed: at 10^(4·weight +
	// its digits - 1), at least 10^-dscale.
	if 4*weight+decdigits.Len(uint64(first))-1 < -dscale {
		return dst, false
	}
	// sign, integer part, point, fraction: 4 per group, and dscale
	dst = slices.Grow(dst, 2+4*max(weight+1, 1)+dscale+4)
	if sign != 0 {
		dst = append(dst, '-')
	}
	group := func(i int) int { // 0 past the last: trailing zero groups are not sent
		if i >= n {
			return 0
		}
		return int(binary.BigEndian.Uint16(g[2*i:]))
	}
	if weight < 0 {
		dst = append(dst, '0')
	} else {
		dst = appendGroupLead(dst, first)
		for i := 1; i <= weight; i++ {
			dst = appendGroup(dst, group(i))
		}
	}
	if dscale > 0 {
		dst = append(dst, '.')
		// the fraction's groups: weight+1 on (below 0: zero groups
		// before the first), cut to dscale digits
		left := dscale
		for i := weight + 1; left > 0; i++ {
			v := 0
			if i >= 0 {
				v = group(i)
			}
			if left >= 4 {
				dst = appendGroup(dst, v)
				left -= 4
				continue
			}
			var four [4]byte
			appendGroup(four[:0], v)
			dst = append(dst, four[:left]...)
			left = 0
		}
	}
	return dst, true
}

// appendGroup appends the four digits of a base-10000 group.
func appendGroup(dst []byte, v int) []byte {
	hi, lo := v/100, v%100
	return append(dst, twoDigits[2*hi], twoDigits[2*hi+1], twoDigits[2*lo], twoDigits[2*lo+1])
}

// appendGroupLead appends a nonzero group without leading zeros.
func appendGroupLead(dst []byte, v int) []byte {
	switch {
	case v < 10:
		return append(dst, byte('0'+v))
	case v < 100:
		return append(dst, twoDigits[2*v], twoDigits[2*v+1])
	case v < 1000:
		return append(dst, byte('0'+v/100), twoDigits[2*(v%100)], twoDigits[2*(v%100)+1])
	}
	return appendGroup(dst, v)
}

// twoDigits are the texts of 00 to 99.
const twoDigits = decdigits.Pairs

// The Unix time of PostgreSQL's epoch (2000-01-01), the wire values of
// the infinities, and the range of dates and timestamps pgx accepts (its
// minDateTime, endDate and endTimestamp), in Unix seconds.
const (
	y2kUnixSeconds = 946684800
	usPerSecond    = 1_000_000
	secondsPerDay  = 86400
	usPerDay       = secondsPerDay * usPerSecond
	infinityDays   = math.MaxInt32
	negInfDays     = math.MinInt32
	infinityMicros = math.MaxInt64
	negInfMicros   = math.MinInt64
)

var (
	minTimeUnix      = time.Date(-4713, 11, 24, 0, 0, 0, 0, time.UTC).Unix()
	endDateUnix      = time.Date(5874898, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	endTimestampUnix = time.Date(294277, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

// decodeDate decodes a date (days since 2000-01-01) into the time Convert
// gives; infinities and dates out of pgx's range take the codec path, which
// reports them.
func decodeDate(a *arena, src []byte) (any, bool) {
	if len(src) != 4 {
		return nil, false
	}
	days := int32(binary.BigEndian.Uint32(src))
	if days == infinityDays || days == negInfDays {
		return nil, false
	}
	if sec := int64(days)*secondsPerDay + y2kUnixSeconds; sec < minTimeUnix || sec >= endDateUnix {
		return nil, false
	}
	return a.date(days), true
}

// decodeTimestamp decodes a timestamp or timestamptz (microseconds since
// 2000-01-01 UTC) into the time Convert gives.
func decodeTimestamp(a *arena, src []byte) (any, bool) {
	if len(src) != 8 {
		return nil, false
	}
	us := int64(binary.BigEndian.Uint64(src))
	if us == infinityMicros || us == negInfMicros {
		return nil, false
	}
	// Midnight of a day of the day table (a timestamp that holds a date,
	// as many do): the table's time.
	if days := us / usPerDay; us%usPerDay == 0 && days >= dayTableFirst && days < dayTableEnd {
		return a.date(int32(days)), true
	}
	sec, frac := us/usPerSecond, us%usPerSecond
	if frac < 0 {
		sec, frac = sec-1, frac+usPerSecond
	}
	sec += y2kUnixSeconds
	if sec < minTimeUnix || sec >= endTimestampUnix {
		return nil, false
	}
	return a.utc(sec, int32(frac*1000)), true
}

// arrayDecoder is the direct decoder of a one-dimensional array of a type
// scalarDecoder decodes, or nil.
func arrayDecoder(col *mappings.Column, mode mappings.NumericMode, oid uint32) fastFunc {
	elemOID, ok := arrayElemOID[oid]
	if !ok {
		return nil
	}
	elem := mappings.Column{Name: col.Name, Type: trimArray(col.Type), TypeName: col.ElemTypeName, Category: col.ElemCategory, KeepPadding: col.KeepPadding}
	dec := scalarDecoder(&elem, mode, elemOID)
	if dec == nil {
		return nil
	}
	return func(a *arena, src []byte) (any, bool) {
		// ndim, has-null flag, element type, then per dimension its
		// length and lower bound, then each element's length (-1: NULL)
		// and bytes.
		if len(src) < 12 {
			return nil, false
		}
		ndim := int32(binary.BigEndian.Uint32(src))
		if uint32(binary.BigEndian.Uint32(src[8:])) != elemOID {
			return nil, false
		}
		if ndim == 0 {
			if len(src) != 12 {
				return nil, false
			}
			return a.boxArray(transform.Array{}), true
		}
		if ndim != 1 || len(src) < 20 {
			return nil, false
		}
		n := int32(binary.BigEndian.Uint32(src[12:]))
		if n < 0 || int(n) > (len(src)-20)/4 {
			return nil, false
		}
		if int32(binary.BigEndian.Uint32(src[16:])) != 1 {
			return nil, false // another lower bound: checkArrayDims refuses it
		}
		out := a.array(int(n))
		rest := src[20:]
		for i := range out {
			if len(rest) < 4 {
				return nil, false
			}
			size := int32(binary.BigEndian.Uint32(rest))
			rest = rest[4:]
			if size == -1 {
				continue // NULL
			}
			if size < 0 {
				return nil, false // pgx refuses it
			}
			if int(size) > len(rest) {
				return nil, false
			}
			v, ok := dec(a, rest[:size])
			if !ok {
				return nil, false
			}
			out[i] = v
			rest = rest[size:]
		}
		if len(rest) != 0 {
			return nil, false
		}
		return a.boxArray(out), true
	}
}

// arrayElemOID maps the array types scalarDecoder's types arrive as to
// their element types.
var arrayElemOID = map[uint32]uint32{
	pgtype.Int2ArrayOID: pgtype.Int2OID, pgtype.Int4ArrayOID: pgtype.Int4OID, pgtype.Int8ArrayOID: pgtype.Int8OID,
	pgtype.Float4ArrayOID: pgtype.Float4OID, pgtype.Float8ArrayOID: pgtype.Float8OID,
	pgtype.NumericArrayOID: pgtype.NumericOID, pgtype.BoolArrayOID: pgtype.BoolOID,
	pgtype.TextArrayOID: pgtype.TextOID, pgtype.VarcharArrayOID: pgtype.VarcharOID,
	pgtype.BPCharArrayOID: pgtype.BPCharOID, pgtype.NameArrayOID: pgtype.NameOID,
	pgtype.DateArrayOID: pgtype.DateOID, pgtype.TimestampArrayOID: pgtype.TimestampOID,
	pgtype.TimestamptzArrayOID: pgtype.TimestamptzOID, pgtype.UUIDArrayOID: pgtype.UUIDOID,
	pgtype.ByteaArrayOID: pgtype.ByteaOID,
}

// trimArray is an array type's element type: "numeric(6,2)[]" ->
// "numeric(6,2)".
func trimArray(typ string) string {
	if len(typ) > 2 && typ[len(typ)-2:] == "[]" {
		return typ[:len(typ)-2]
	}
	return typ
}

// decode converts one row. raw is only read during the call.
func (d *rowDecoder) decode(raw [][]byte) ([]any, error) {
	if len(raw) < d.width {
		return nil, fmt.Errorf("%s: the query returned %d columns, want %d", d.node.Table.Name, len(raw), d.width)
	}
	if len(d.block) < d.width {
		d.blockSize = min(max(2*d.blockSize, 8), maxBlockRows)
		d.block = make([]any, d.blockSize*d.width)
	}
	row := d.block[:d.width:d.width]
	d.block = d.block[d.width:]
	for i := range d.cols {
		src := raw[i]
		if src == nil {
			continue // NULL
		}
		c := &d.cols[i]
		if c.fast != nil {
			var v any
			var ok bool
			if c.cache != nil {
				v, ok = c.cache.decode(c.fast, &d.arena, src)
			} else {
				v, ok = c.fast(&d.arena, src)
			}
			if ok {
				row[i] = v
				continue
			}
		}
		v, err := d.slow(c, src)
		if err != nil {
			// The row is read; a document that would hold the value is
			// rejected (see transform.Invalid).
			row[i] = invalidValue(&c.col, v, err)
			continue
		}
		row[i] = v
	}
	return row, nil
}

// slow decodes a value through pgx's codec and Convert.
func (d *rowDecoder) slow(c *decodeCol, src []byte) (any, error) {
	var v any
	var err error
	if c.col.Category == "A" && c.fmt == pgx.BinaryFormatCode {
		if err := checkArrayDims(&c.col, src); err != nil {
			return nil, err
		}
	}
	if t, ok := d.m.TypeForOID(c.oid); ok {
		v, err = t.Codec.DecodeValue(d.m, c.oid, c.fmt, src)
	} else if c.fmt == pgx.TextFormatCode {
		v = string(src)
	} else {
		v = append([]byte(nil), src...)
	}
	if err != nil {
		return v, err
	}
	if n, isNum := v.(pgtype.Numeric); isNum && c.fmt == pgx.BinaryFormatCode && len(src) >= 8 && n.Valid && !n.NaN && n.InfinityModifier == 0 && (n.Int == nil || n.Int.Sign() == 0) {
		// pgx drops a zero's display scale; the wire has it (0.00)
		dscale := int(int16(binary.BigEndian.Uint16(src[6:])))
		text := string(appendZero(nil, 0, max(dscale, numericScale(c.col.Type))))
		out, err := numericValue(&c.col, text, c.mode)
		if err != nil {
			return v, err
		}
		return out, nil
	}
	out, err := Convert(c.col, v, c.mode)
	if err != nil {
		// What the driver decoded tells invalidValue the value's text
		// (a ±infinity key is still a stream position).
		return v, err
	}
	return out, nil
}
