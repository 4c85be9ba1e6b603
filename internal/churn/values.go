package churn

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Values travel as PostgreSQL's text form (nil is NULL) and are cast by
// the statements ($1::text::<type>), so one code path serves every type,
// domains and enums included. The generator's sessions use DateStyle ISO
// and TimeZone UTC, so date and time texts have one known shape.

// epoch anchors fresh date and time values when a column has none to
// start from.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	layoutTimestamp = "2006-01-02 15:04:05"
	layoutDate      = "2006-01-02"
)

func ptr(s string) *string { return &s }

// letters for fresh words; a few non-ASCII ones so that text is not only
// ASCII (never '.', '$' or '-': words become field names and page ids).
const (
	ascii   = "abcdefghijklmnopqrstuvwxyz"
	unicode = "éüßøçñ日本ж"
)

// word is a fresh lowercase word of 3 to 9 letters; plain ASCII when
// plain is set.
func word(r *rand.Rand, plain bool) string {
	n := 3 + r.IntN(7)
	var b strings.Builder
	uni := []rune(unicode)
	for i := 0; i < n; i++ {
		if !plain && r.IntN(12) == 0 {
			b.WriteRune(uni[r.IntN(len(uni))])
			continue
		}
		b.WriteByte(ascii[r.IntN(len(ascii))])
	}
	return b.String()
}

// intRange is the range of an integer column's type.
func intRange(bits int) (lo, hi int64) {
	switch bits {
	case 16:
		return math.MinInt16, math.MaxInt16
	case 32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// numericLimit is the largest absolute value, scaled by 10^scale, that
// numeric(prec, scale) holds (capped: fresh values stay small).
func numericLimit(c *column) int64 {
	lim := int64(1_000_000)
	if c.prec > 0 {
		digits := c.prec - c.scale
		l := int64(1)
		for i := 0; i < digits && l < lim; i++ {
			l *= 10
		}
		lim = min(lim, l)
	}
	return lim*pow10(c.scale) - 1
}

func pow10(n int) int64 {
	p := int64(1)
	for i := 0; i < n; i++ {
		p *= 10
	}
	return p
}

// numericScale is the scale fresh numbers of c use.
func numericScale(c *column) int {
	if c.prec == 0 && c.scale == 0 {
		return 2
	}
	return c.scale
}

// parseScaled reads a decimal text as an integer scaled by 10^scale.
func parseScaled(s string, scale int) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > scale {
		frac = frac[:scale]
	}
	frac += strings.Repeat("0", scale-len(frac))
	if len(whole)+len(frac) > 17 {
		return 0, false
	}
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

func formatScaled(n int64, scale int) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	if scale == 0 {
		return sign + strconv.FormatInt(n, 10)
	}
	p := pow10(scale)
	return fmt.Sprintf("%s%d.%0*d", sign, n/p, scale, n%p)
}

// parseTime reads a date/time text of kind k (ISO, UTC session).
func parseTime(k kind, s string) (time.Time, bool) {
	var (
		t   time.Time
		err error
	)
	switch k {
	case kDate:
		t, err = time.Parse(layoutDate, s)
	case kTimestamp:
		t, err = time.Parse(layoutTimestamp, s)
	case kTimestamptz:
		t, err = time.Parse(layoutTimestamp+"-07", s)
		if err != nil {
			t, err = time.Parse(layoutTimestamp+"-07:00", s)
		}
	default:
		return time.Time{}, false
	}
	return t.UTC(), err == nil
}

func formatTime(k kind, t time.Time) string {
	t = t.UTC()
	switch k {
	case kDate:
		return t.Format(layoutDate)
	case kTimestamp:
		return t.Format(layoutTimestamp + ".000000")
	}
	return t.Format(layoutTimestamp+".000000") + "+00"
}

// fresh makes a new value of c's type, unrelated to existing ones; nil
// when there is no generator for the type.
func fresh(r *rand.Rand, c *column) *string {
	switch c.kind {
	case kInt:
		lo, hi := intRange(c.bits)
		n := int64(1000)
		if c.unique || c.pk {
			n = 1_000_000 // unlikely to meet an existing value
		}
		return ptr(strconv.FormatInt(max(lo, min(hi, r.Int64N(n))), 10))
	case kNumeric:
		sc := numericScale(c)
		return ptr(formatScaled(r.Int64N(numericLimit(c)+1), sc))
	case kFloat:
		return ptr(strconv.FormatFloat(float64(r.IntN(100000))/100, 'f', -1, 64))
	case kText:
		w := word(r, c.pk || c.unique)
		if r.IntN(4) == 0 && !c.pk {
			w += " " + word(r, true)
		}
		if c.maxLen > 0 && len([]rune(w)) > c.maxLen {
			w = string([]rune(w)[:c.maxLen])
		}
		return ptr(w)
	case kBool:
		return ptr(strconv.FormatBool(r.IntN(2) == 0))
	case kDate, kTimestamp, kTimestamptz:
		t := epoch.Add(time.Duration(r.Int64N(2*365*24*3600)-365*24*3600) * time.Second)
		t = t.Add(time.Duration(r.IntN(1_000_000)) * time.Microsecond)
		return ptr(formatTime(c.kind, t))
	case kTime:
		return ptr(fmt.Sprintf("%02d:%02d:%02d", r.IntN(24), r.IntN(60), r.IntN(60)))
	case kInterval:
		return ptr(fmt.Sprintf("%d minutes", r.IntN(10000)))
	case kUUID:
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		return ptr(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:]))
	case kBytea:
		b := make([]byte, 1+r.IntN(8))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return ptr(fmt.Sprintf(`\x%x`, b))
	case kJSON:
		return ptr(fmt.Sprintf(`{"n": %d, "w": %q}`, r.IntN(1000), word(r, true)))
	case kTSVector:
		return ptr(word(r, true) + " " + word(r, true))
	case kEnum:
		if len(c.labels) == 0 {
			return nil
		}
		return ptr(c.labels[r.IntN(len(c.labels))])
	case kArray:
		if c.elem.kind == kOther || c.elem.kind == kArray {
			return nil
		}
		n := r.IntN(4)
		parts := make([]string, 0, n)
		for i := 0; i < n; i++ {
			v := fresh(r, c.elem)
			if v == nil {
				return nil
			}
			parts = append(parts, `"`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(*v)+`"`)
		}
		return ptr("{" + strings.Join(parts, ",") + "}")
	}
	return nil
}

// perturb makes a value near old (a small step for numbers and times),
// or a fresh one for types without an order.
func perturb(r *rand.Rand, c *column, old string) *string {
	switch c.kind {
	case kInt:
		n, err := strconv.ParseInt(old, 10, 64)
		if err != nil {
			return fresh(r, c)
		}
		lo, hi := intRange(c.bits)
		if n >= 1 {
			lo = 1 // positive values stay positive (CHECK (x > 0) is common)
		} else if n == 0 {
			lo = 0
		}
		d := int64(1 + r.IntN(10))
		if r.IntN(2) == 0 && n-d >= lo {
			return ptr(strconv.FormatInt(n-d, 10))
		}
		if n <= hi-d {
			return ptr(strconv.FormatInt(n+d, 10))
		}
		return ptr(strconv.FormatInt(n-d, 10))
	case kNumeric:
		sc := numericScale(c)
		n, ok := parseScaled(old, sc)
		if !ok {
			return fresh(r, c)
		}
		lim := numericLimit(c)
		step := max(1, abs(n)/10)
		m := n + r.Int64N(2*step+1) - step
		if m == n {
			m++
		}
		if (n >= 0 && m < 0) || m > lim || m < -lim {
			m = n / 2
		}
		return ptr(formatScaled(m, sc))
	case kFloat:
		f, err := strconv.ParseFloat(old, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fresh(r, c)
		}
		return ptr(strconv.FormatFloat(math.Round((f+float64(r.IntN(2001)-1000)/100)*100)/100, 'f', -1, 64))
	case kDate, kTimestamp, kTimestamptz:
		t, ok := parseTime(c.kind, old)
		if !ok {
			return fresh(r, c)
		}
		d := time.Duration(r.Int64N(30*24*3600)+1) * time.Second
		if r.IntN(2) == 0 {
			d = -d
		}
		return ptr(formatTime(c.kind, t.Add(d)))
	}
	return fresh(r, c)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// between makes a value strictly between a and b (in either order); ok is
// false when there is none (equal or adjacent values, or texts it cannot
// read).
func between(r *rand.Rand, c *column, a, b string) (string, bool) {
	switch c.kind {
	case kInt:
		x, err1 := strconv.ParseInt(a, 10, 64)
		y, err2 := strconv.ParseInt(b, 10, 64)
		if err1 != nil || err2 != nil {
			return "", false
		}
		x, y = min(x, y), max(x, y)
		if y-x < 2 {
			return "", false
		}
		return strconv.FormatInt(x+1+r.Int64N(y-x-1), 10), true
	case kNumeric:
		sc := numericScale(c)
		x, ok1 := parseScaled(a, sc)
		y, ok2 := parseScaled(b, sc)
		if !ok1 || !ok2 {
			return "", false
		}
		x, y = min(x, y), max(x, y)
		if y-x < 2 {
			return "", false
		}
		return formatScaled(x+1+r.Int64N(y-x-1), sc), true
	case kFloat:
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		if err1 != nil || err2 != nil || x == y || math.IsNaN(x) || math.IsNaN(y) {
			return "", false
		}
		m := x + (y-x)*(0.25+0.5*r.Float64())
		if m == x || m == y {
			return "", false
		}
		return strconv.FormatFloat(m, 'g', -1, 64), true
	case kDate, kTimestamp, kTimestamptz:
		x, ok1 := parseTime(c.kind, a)
		y, ok2 := parseTime(c.kind, b)
		if !ok1 || !ok2 {
			return "", false
		}
		if y.Before(x) {
			x, y = y, x
		}
		unit := time.Microsecond
		if c.kind == kDate {
			unit = 24 * time.Hour
		}
		span := int64(y.Sub(x) / unit)
		if span < 2 {
			return "", false
		}
		return formatTime(c.kind, x.Add(time.Duration(1+r.Int64N(span-1))*unit)), true
	}
	return "", false
}

// compareText orders two texts of an orderable kind; ok is false when
// either cannot be read.
func compareText(c *column, a, b string) (int, bool) {
	switch c.kind {
	case kInt:
		x, err1 := strconv.ParseInt(a, 10, 64)
		y, err2 := strconv.ParseInt(b, 10, 64)
		return cmp.Compare(x, y), err1 == nil && err2 == nil
	case kNumeric, kFloat:
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		return cmp.Compare(x, y), err1 == nil && err2 == nil
	case kDate, kTimestamp, kTimestamptz:
		x, ok1 := parseTime(c.kind, a)
		y, ok2 := parseTime(c.kind, b)
		return x.Compare(y), ok1 && ok2
	case kText, kEnum:
		return strings.Compare(a, b), true
	}
	return 0, false
}

// inBounds tells whether v fits some partition of bs (true when it cannot
// tell).
func inBounds(c *column, bs []bound, v string) bool {
	if len(bs) == 0 {
		return true
	}
	for _, b := range bs {
		switch {
		case b.any:
			return true
		case b.list != nil:
			for _, l := range b.list {
				if cmp, ok := compareText(c, v, l); !ok || cmp == 0 {
					return true
				}
			}
		default:
			lo, okLo := 0, true
			if b.from != "" {
				lo, okLo = compareText(c, v, b.from)
			}
			hi, okHi := -1, true
			if b.to != "" {
				hi, okHi = compareText(c, v, b.to)
			}
			if !okLo || !okHi || (lo >= 0 && hi < 0) {
				return true
			}
		}
	}
	return false
}

// inPartition makes a value that falls in a partition chosen at random.
func inPartition(r *rand.Rand, c *column, bs []bound) *string {
	if len(bs) == 0 {
		return nil
	}
	b := bs[r.IntN(len(bs))]
	switch {
	case b.list != nil:
		if len(b.list) > 0 && b.list[0] != "" {
			return ptr(b.list[r.IntN(len(b.list))])
		}
	case b.from != "" && b.to != "":
		if v, ok := between(r, c, b.from, b.to); ok {
			return ptr(v)
		}
		return ptr(b.from)
	case b.from != "":
		return perturbUp(r, c, b.from)
	case b.to != "":
		if v := perturb(r, c, b.to); v != nil && inBounds(c, []bound{b}, *v) {
			return v
		}
	}
	return nil
}

func perturbUp(r *rand.Rand, c *column, from string) *string {
	for i := 0; i < 4; i++ {
		if v := perturb(r, c, from); v != nil {
			if cmp, ok := compareText(c, *v, from); ok && cmp >= 0 {
				return v
			}
		}
	}
	return ptr(from)
}
