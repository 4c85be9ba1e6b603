package mappings

import (
	"fmt"
	"strings"
)

// DefaultMaxFanout is plan's and advise's --max-fanout: a table one change
// of whose rows can rewrite more documents than this is flagged.
const DefaultMaxFanout = 1000

// FanoutFigures are how many documents one change of a row rewrites,
// over the rows of a table: the median, the 99th percentile and the
// largest (percentile_disc: values some row has), and the mean, which is
// what a run of changes of uniformly chosen rows averages to.
type FanoutFigures struct {
	P50  int64   `json:"p50"`
	P99  int64   `json:"p99"`
	Max  int64   `json:"max"`
	Mean float64 `json:"mean"`
}

// TableFanout is sync's fan-out predicted from the data for one table the
// mapping reads: how many documents (a bucket collection: parents, whose
// pages are rebuilt whole) one change of a row rewrites. Sync traces a
// change of any column the mapping reads through every place reading the
// table, so the table's figures are per row the sum over its places;
// Places say where they come from.
type TableFanout struct {
	// Table is the qualified name, "public.country".
	Table string `json:"table"`
	// Rows counts the table's rows.
	Rows int64 `json:"rows"`
	FanoutFigures
	// Places are the places the mapping reads the table, each with the
	// columns read there and its own figures, in plan order.
	Places []FanoutPlace `json:"places"`
}

// FanoutPlace is one place a mapping reads a table.
type FanoutPlace struct {
	// Collection is the collection entry's name, Node the reading node's
	// path ("customers.address.city.country").
	Collection string `json:"collection"`
	Node       string `json:"node"`
	// How says how the rows are used: "root rows", "bucket rows",
	// "embedded in", "copied into" (an object embed), "copied by lookup
	// into", "listed as ids in", "aggregated into", "join table of".
	How string `json:"how"`
	// Columns are the table's columns read there.
	Columns []string `json:"columns"`
	FanoutFigures
}

// Cause names the mapping choice behind the place's fan-out:
// "country.country copied into customers.address.city.country".
func (p FanoutPlace) Cause(table string) string {
	name := table
	if _, n, err := SplitQualifiedName(table); err == nil {
		name = n
	}
	cols := name
	switch len(p.Columns) {
	case 0:
	case 1:
		cols = name + "." + p.Columns[0]
	default:
		cols = name + ".(" + strings.Join(p.Columns, ", ") + ")"
	}
	return fmt.Sprintf("%s %s %s", cols, p.How, p.Node)
}

// Worst is the place with the largest fan-out (by max, then mean), or
// nil when the table has no place.
func (t TableFanout) Worst() *FanoutPlace {
	var w *FanoutPlace
	for i := range t.Places {
		p := &t.Places[i]
		if w == nil || p.Max > w.Max || (p.Max == w.Max && p.Mean > w.Mean) {
			w = p
		}
	}
	return w
}

// Over reports whether one change of some row of the table rewrites more
// than limit documents (limit 0: never).
func (t TableFanout) Over(limit int64) bool { return limit > 0 && t.Max > limit }

// Summary says the table's figures and their cause in one line.
func (t TableFanout) Summary() string {
	s := fmt.Sprintf("%s: one change of a row rewrites p50 %d, p99 %d, max %d documents (mean %.1f, over %d rows)",
		t.Table, t.P50, t.P99, t.Max, t.Mean, t.Rows)
	if w := t.Worst(); w != nil && len(t.Places) > 1 {
		s += fmt.Sprintf("; most by %s (p50 %d, max %d)", w.Cause(t.Table), w.P50, w.Max)
	} else if w != nil {
		s += "; by " + w.Cause(t.Table)
	}
	return s
}
