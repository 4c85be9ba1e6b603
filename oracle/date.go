package oracle

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Dates and timestamps as PostgreSQL's to_json writes them (ISO 8601,
// whatever DateStyle says): "2024-01-01", "2024-01-01T10:00:00.123456",
// with "+hh[:mm[:ss]]" for timestamptz in the session's time zone, the
// year with as many digits as it needs, " BC" after dates before year 1,
// and "infinity" / "-infinity". A BSON date is milliseconds since
// 1970-01-01 UTC in the proleptic Gregorian calendar; digits below the
// millisecond are dropped rounding toward the past.

// civil is a parsed date or timestamp.
type civil struct {
	year       int64
	month, day int
	hour, min  int
	sec        int
	micro      int // microseconds, 0-999999
	offset     int // seconds east of UTC
	hasTime    bool
}

func dateValue(s string, vt valueType, path string) (any, error) {
	if s == "infinity" || s == "-infinity" {
		return nil, reject(path, "the %s value %s cannot be written: a BSON date has no infinity", vt.desc, s)
	}
	c, err := parseCivil(s)
	if err != nil {
		return nil, &badJSON{msg: fmt.Sprintf("%s value %q: %v", vt.desc, s, err)}
	}
	if vt.timeText && vt.fam != famDate {
		return c.isoText(), nil
	}
	return bson.DateTime(c.millis()), nil
}

// parseCivil reads PostgreSQL's JSON text of a date or timestamp.
func parseCivil(s string) (civil, error) {
	var c civil
	bc := false
	if t, ok := strings.CutSuffix(s, " BC"); ok {
		bc, s = true, t
	}
	date, rest, hasTime := strings.Cut(s, "T")
	parts := strings.Split(date, "-")
	if len(parts) != 3 {
		return c, fmt.Errorf("not a date")
	}
	y, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil {
		return c, err
	}
	m, err1 := strconv.Atoi(parts[1])
	d, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || m < 1 || m > 12 || d < 1 || d > 31 {
		return c, fmt.Errorf("bad month or day")
	}
	if bc {
		y = 1 - y // 1 BC is year 0, 2 BC year -1
	}
	c.year, c.month, c.day = y, m, d
	if !hasTime {
		return c, nil
	}
	c.hasTime = true
	// hh:mm:ss[.ffffff][(+|-)hh[:mm[:ss]]]
	clock := rest
	if i := strings.IndexAny(rest, "+-"); i >= 0 {
		clock = rest[:i]
		off, err := parseOffset(rest[i:])
		if err != nil {
			return c, err
		}
		c.offset = off
	}
	clock, frac, hasFrac := strings.Cut(clock, ".")
	hms := strings.Split(clock, ":")
	if len(hms) != 3 {
		return c, fmt.Errorf("bad time %q", clock)
	}
	if c.hour, err = strconv.Atoi(hms[0]); err != nil {
		return c, err
	}
	if c.min, err = strconv.Atoi(hms[1]); err != nil {
		return c, err
	}
	if c.sec, err = strconv.Atoi(hms[2]); err != nil {
		return c, err
	}
	if hasFrac {
		if len(frac) == 0 || len(frac) > 6 {
			return c, fmt.Errorf("bad fraction %q", frac)
		}
		f := frac + strings.Repeat("0", 6-len(frac))
		if c.micro, err = strconv.Atoi(f); err != nil {
			return c, err
		}
	}
	return c, nil
}

// parseOffset reads "+hh", "+hh:mm" or "+hh:mm:ss" into seconds east.
func parseOffset(s string) (int, error) {
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	parts := strings.Split(s[1:], ":")
	if len(parts) > 3 {
		return 0, fmt.Errorf("bad offset %q", s)
	}
	total := 0
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return 0, fmt.Errorf("bad offset %q", s)
		}
		total += n * []int{3600, 60, 1}[i]
	}
	return sign * total, nil
}

// daysSinceEpoch counts the days from 1970-01-01 to the given date of the
// proleptic Gregorian calendar (negative before), by counting whole
// 400-year eras (146097 days each) and the days into the era.
func daysSinceEpoch(y int64, m, d int) int64 {
	// Move January and February to the end of the previous year, so that
	// the leap day is the last day of a year.
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400 // 0..399
	mp := (m + 9) % 12 // March = 0
	doy := int64((153*mp+2)/5 + d - 1)
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468 // 719468: days from 0000-03-01 to 1970-01-01
}

// millis is the BSON date of c: milliseconds since the epoch, UTC.
func (c civil) millis() int64 {
	days := daysSinceEpoch(c.year, c.month, c.day)
	secs := days*86400 + int64(c.hour*3600+c.min*60+c.sec) - int64(c.offset)
	return secs*1000 + int64(c.micro/1000)
}

// isoText is the timestamp in UTC as ISO 8601 text with six fractional
// digits and Z (timestamp: string): years outside 0000-9999 with their sign
// and six digits (ISO 8601's expanded form, as JavaScript writes it), the
// year 0 being 1 BC.
func (c civil) isoText() string {
	ms := c.millis()
	secs := floorDiv(ms, 1000)
	days := floorDiv(secs, 86400)
	rem := secs - days*86400
	y, m, d := civilFromDays(days)
	year := fmt.Sprintf("%04d", y)
	switch {
	case y < 0:
		year = fmt.Sprintf("-%06d", -y)
	case y > 9999:
		year = fmt.Sprintf("+%06d", y)
	}
	return fmt.Sprintf("%s-%02d-%02dT%02d:%02d:%02d.%06dZ", year, m, d, rem/3600, rem%3600/60, rem%60, c.micro)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// civilFromDays is the inverse of daysSinceEpoch.
func civilFromDays(z int64) (int64, int, int) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := int(doy - (153*mp+2)/5 + 1)
	m := int(mp + 3)
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}
