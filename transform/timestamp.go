package transform

import (
	"strconv"
	"time"

	"github.com/denorm/denorm/mappings"
)

// Timestamps. A BSON date holds milliseconds since the epoch: a
// timestamp or timestamptz value with digits below the millisecond is
// written as the millisecond it falls in (rounded toward the past), by
// default. The mapping's timestamp: string keeps every digit as text
// instead (mappings.Column.TimestampText): DocValue applies it where a
// column's value enters a document; rows keep times, so keys, stream
// positions and expressions are unaffected.

// TimestampText is the text timestamp: string writes for t: ISO 8601 in
// UTC, exactly six fractional digits and "Z"
// (2024-01-01T10:00:00.123456Z); years 0000 to 9999 in four digits,
// other years with a sign and six digits, ISO 8601's expanded form as
// ECMAScript writes it (+012345-01-01T00:00:00.000000Z). Years are
// astronomical, as ISO 8601's: year 0000 is 1 BC, -000043 is 44 BC. A
// timestamp without time zone is written as if it were in UTC, as its
// BSON date is. Digits below the microsecond (PostgreSQL has none) are
// dropped.
func TimestampText(t time.Time) string {
	return string(AppendTimestampText(make([]byte, 0, 32), t))
}

// AppendTimestampText appends TimestampText(t) to dst.
func AppendTimestampText(dst []byte, t time.Time) []byte {
	t = t.UTC()
	y := t.Year()
	switch {
	case y >= 0 && y <= 9999:
		dst = appendDigits(dst, y, 4)
	case y < 0:
		dst = appendDigits(append(dst, '-'), -y, 6)
	default:
		dst = appendDigits(append(dst, '+'), y, 6)
	}
	return t.AppendFormat(dst, "-01-02T15:04:05.000000Z")
}

// appendDigits appends n (>= 0) in at least width digits.
func appendDigits(dst []byte, n, width int) []byte {
	s := strconv.Itoa(n)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// DocValue is the value column c's value v takes in a document: v as it
// is, or, when c.TimestampText, its times (a time, or the times of an
// array) as TimestampText.
func DocValue(c *mappings.Column, v any) any {
	if !c.TimestampText || !timestampColumn(c) {
		return v
	}
	switch x := v.(type) {
	case time.Time:
		return TimestampText(x)
	case Array:
		out := make(Array, len(x))
		for i, e := range x {
			if t, ok := e.(time.Time); ok {
				out[i] = TimestampText(t)
				continue
			}
			out[i] = e
		}
		return out
	}
	return v
}

// timestampColumn reports whether c holds timestamps (or arrays of them):
// timestamp: string leaves dates (also times) as dates.
func timestampColumn(c *mappings.Column) bool {
	t := c.TypeName
	if c.Category == "A" {
		t = c.ElemTypeName
	}
	return t == "timestamp" || t == "timestamptz"
}

// SubMillisecond reports whether t has digits below the millisecond,
// which a BSON date drops.
func SubMillisecond(t time.Time) bool {
	return t.Nanosecond()%int(time.Millisecond) != 0
}
