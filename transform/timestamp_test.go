package transform

import (
	"testing"
	"time"

	"github.com/denorm/denorm/mappings"
)

// TestTimestampText: timestamp: string writes ISO 8601 in UTC with six
// fractional digits, years outside 0000..9999 in the expanded form.
func TestTimestampText(t *testing.T) {
	oslo := time.FixedZone("+01", 3600)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2024, 1, 1, 10, 0, 0, 123456000, time.UTC), "2024-01-01T10:00:00.123456Z"},
		{time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC), "2024-01-01T10:00:00.000000Z"},
		{time.Date(2024, 1, 1, 0, 30, 0, 500, oslo), "2023-12-31T23:30:00.000000Z"},
		{time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC), "1969-12-31T23:59:59.999999Z"},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC), "9999-12-31T23:59:59.999999Z"},
		{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), "+010000-01-01T00:00:00.000000Z"},
		{time.Date(294276, 12, 31, 23, 59, 59, 999999000, time.UTC), "+294276-12-31T23:59:59.999999Z"},
		{time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC), "0001-01-01T00:00:00.000001Z"},
		{time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC), "0000-12-31T00:00:00.000000Z"},      // 1 BC
		{time.Date(-43, 3, 15, 12, 0, 0, 0, time.UTC), "-000043-03-15T12:00:00.000000Z"}, // 44 BC
		{time.Date(-4712, 11, 24, 0, 0, 0, 0, time.UTC), "-004712-11-24T00:00:00.000000Z"},
	} {
		if got := TimestampText(c.t); got != c.want {
			t.Errorf("TimestampText(%v) = %s, want %s", c.t, got, c.want)
		}
	}
}

func TestDocValueTimestamp(t *testing.T) {
	ts := time.Date(2024, 1, 1, 10, 0, 0, 123456000, time.UTC)
	text := &mappings.Column{TypeName: "timestamptz", TimestampText: true}
	date := &mappings.Column{TypeName: "timestamptz"}
	if got := DocValue(text, ts); got != "2024-01-01T10:00:00.123456Z" {
		t.Errorf("text: %#v", got)
	}
	if got := DocValue(date, ts); got != ts {
		t.Errorf("date: %#v", got)
	}
	arr := DocValue(&mappings.Column{Category: "A", ElemTypeName: "timestamp", TimestampText: true}, Array{ts, nil})
	if a, ok := arr.(Array); !ok || len(a) != 2 || a[0] != "2024-01-01T10:00:00.123456Z" || a[1] != nil {
		t.Errorf("array: %#v", arr)
	}
	// A date stays a date: timestamp: string set for a whole file reaches
	// date columns too (the oracle found them written as text).
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := DocValue(&mappings.Column{TypeName: "date", TimestampText: true}, day); got != day {
		t.Errorf("date: %#v", got)
	}
	if got := DocValue(&mappings.Column{TypeName: "_date", Category: "A", ElemTypeName: "date", TimestampText: true}, Array{day}); got.(Array)[0] != day {
		t.Errorf("date array: %#v", got)
	}
	iv := Invalid{Text: "infinity"}
	if got := DocValue(text, iv); got != any(iv) {
		t.Errorf("invalid: %#v", got)
	}
	if !SubMillisecond(ts) || SubMillisecond(ts.Truncate(time.Millisecond)) || !SubMillisecond(time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC)) {
		t.Error("SubMillisecond")
	}
}

// TestIDTimestampText: a timestamp _id in timestamp: string is the text,
// as the document holds it, for every caller of ID (sync's deletes too).
func TestIDTimestampText(t *testing.T) {
	ts := time.Date(2024, 1, 1, 10, 0, 0, 123456000, time.UTC)
	root := &mappings.Node{Table: &mappings.Table{Name: "e"}, Columns: []mappings.Column{{Name: "at", TypeName: "timestamptz", TimestampText: true}, {Name: "n", TypeName: "int4"}}}
	cp := &mappings.CollectionPlan{Name: "es", Root: root, IDCols: []int{0}}
	if got := ID(cp, []any{ts, int32(1)}); got != "2024-01-01T10:00:00.123456Z" {
		t.Errorf("ID = %#v", got)
	}
	cp.IDCols, cp.IDNames = []int{0, 1}, []string{"at", "n"}
	d, ok := ID(cp, []any{ts, int32(1)}).(Doc)
	if !ok || d[0].Value != "2024-01-01T10:00:00.123456Z" || d[1].Value != int32(1) {
		t.Errorf("composite ID = %#v", d)
	}
}
