package load

import (
	"math"
	"strconv"
)

// The formatting of doubles and dates as it was before the fast paths
// (commit 2c80b28), kept as the oracle the new code is held to byte for
// byte, and as the "old" side of the benchmarks.

func oldAppendJSONDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `{"$numberDouble":"NaN"}`...)
	case math.IsInf(f, 1):
		return append(dst, `{"$numberDouble":"Infinity"}`...)
	case math.IsInf(f, -1):
		return append(dst, `{"$numberDouble":"-Infinity"}`...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'G', -1, 64)
	for _, c := range dst[start:] {
		if c == 'E' || c == '.' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

type oldDayText struct {
	day  uint64
	text [10]byte
}

// oldDays is the old writer's day-text slots (nil: none).
type oldDays [64]oldDayText

func (c *oldDays) appendDate(dst []byte, ms int64) []byte {
	if ms < 0 || ms >= maxISODateMillis {
		dst = append(dst, `{"$date":{"$numberLong":"`...)
		dst = strconv.AppendInt(dst, ms, 10)
		return append(dst, `"}}`...)
	}
	days, rest := uint64(ms/86_400_000), ms%86_400_000
	dst = append(dst, `{"$date":"`...)
	if c == nil {
		dst = oldAppendDay(dst, days)
	} else {
		e := &c[days%64]
		if e.day != days+1 {
			oldAppendDay(e.text[:0], days)
			e.day = days + 1
		}
		dst = append(dst, e.text[:]...)
	}
	dst = append(dst, 'T')
	dst = oldAppend2(dst, int(rest/3_600_000))
	dst = append(dst, ':')
	dst = oldAppend2(dst, int(rest/60_000%60))
	dst = append(dst, ':')
	dst = oldAppend2(dst, int(rest/1000%60))
	if frac := int(rest % 1000); frac != 0 {
		dst = append(dst, '.', byte('0'+frac/100))
		if frac%100 != 0 {
			dst = append(dst, byte('0'+frac/10%10))
			if frac%10 != 0 {
				dst = append(dst, byte('0'+frac%10))
			}
		}
	}
	return append(dst, `Z"}`...)
}

func oldAppendDay(dst []byte, days uint64) []byte {
	y, m, d := oldCivilDate(days)
	dst = oldAppend4(dst, y)
	dst = append(dst, '-')
	dst = oldAppend2(dst, m)
	dst = append(dst, '-')
	return oldAppend2(dst, d)
}

func oldCivilDate(days uint64) (year, month, day int) {
	z := days + 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day = int(doy - (153*mp+2)/5 + 1)
	month = int(mp + 3)
	if month > 12 {
		month -= 12
	}
	year = int(yoe + era*400)
	if month <= 2 {
		year++
	}
	return year, month, day
}

func oldAppend2(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

func oldAppend4(dst []byte, v int) []byte {
	return append(dst, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}
