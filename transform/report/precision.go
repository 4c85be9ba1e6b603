package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// Timestamps with digits below the millisecond. A BSON date holds
// milliseconds: migrate writes a time with more digits as the
// millisecond it falls in (rounded toward the past), unless the mapping
// says timestamp: string (docs/types.md). The collector counts the
// values that lose digits, per field of the documents it sees (every
// value, also below a truncated shape), and names each field's source
// column where the plan says it.

// PrecisionLoss is one document field whose dates lose their digits
// below the millisecond.
type PrecisionLoss struct {
	// Path is the field ("createdAt", "comments[].at", "_id").
	Path string `json:"path"`
	// Column is the source column ("comment.created_at") when the field
	// is a column's; "" for a computed one (expr:).
	Column string `json:"column,omitempty"`
	// Count is the number of such values in the documents built.
	Count int64 `json:"count"`
	// Example is the first one, in full (TimestampText), and Source the
	// document holding it.
	Example string `json:"example"`
	Source  string `json:"source"`
}

// maxLossPaths caps the fields counted; values of further fields (pivot
// names from data) are counted under lossOther.
const (
	maxLossPaths = MaxPaths
	lossOther    = "(other fields)"
)

// lose counts time t of field path, if it has digits below the
// millisecond.
func (col *Collector) lose(path string, t time.Time, source string) {
	if !transform.SubMillisecond(t) {
		return
	}
	l := col.losses[path]
	if l == nil {
		if len(col.losses) >= maxLossPaths {
			path = lossOther
			l = col.losses[path]
		}
		if l == nil {
			l = &PrecisionLoss{Path: path, Column: col.columns[path], Example: transform.TimestampText(t), Source: source}
			col.losses[path] = l
		}
	}
	l.Count++
}

// loseAll counts the times anywhere in v, found at path: the walk of the
// values the shape does not follow (past MaxPaths).
func (col *Collector) loseAll(path string, v any, source string) {
	switch x := v.(type) {
	case time.Time:
		col.lose(path, x, source)
	case transform.Doc:
		for _, f := range x {
			col.loseAll(path+"."+f.Key, f.Value, source)
		}
	case transform.Array:
		for _, e := range x {
			col.loseAll(path+"[]", e, source)
		}
	}
}

// precision lists the counted fields, by path.
func (col *Collector) precision() []PrecisionLoss {
	var out []PrecisionLoss
	for _, l := range col.losses {
		out = append(out, *l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// fieldColumns maps the field paths of cp's documents to the source
// columns ("table.column") they are written from, as report paths name
// fields: "a.b" in an embedded document, "a[].b" in an array's items,
// "a[]" for an array's items themselves.
func fieldColumns(cp *mappings.CollectionPlan) map[string]string {
	m := map[string]string{}
	root := cp.Root
	add := func(path string, n *mappings.Node, c int) {
		if n == nil || n.Table == nil || c < 0 || c >= len(n.Columns) {
			return // a plan without the column (hand-made in tests)
		}
		name := n.Table.Name + "." + n.Columns[c].Name
		m[path] = name
		if n.Columns[c].Category == "A" {
			m[path+"[]"] = name
		}
	}
	prefix := ""
	if bp := cp.Bucket; bp != nil {
		for i, c := range bp.By {
			if i < len(bp.ByNames) {
				add(bp.ByNames[i], root, c)
			}
		}
		prefix = bp.Items + "[]."
	} else if len(cp.IDCols) == 1 {
		add("_id", root, cp.IDCols[0])
	} else {
		for i, c := range cp.IDCols {
			if i < len(cp.IDNames) {
				add("_id."+cp.IDNames[i], root, c)
			}
		}
	}
	var fields func(n *mappings.Node, prefix string)
	fields = func(n *mappings.Node, prefix string) {
		for _, f := range n.Fields {
			if f.Pivot != nil {
				continue // named by the data
			}
			p := prefix + f.Name
			switch f.Kind {
			case mappings.FieldColumn:
				owner := n
				if f.Value.Lookup != nil {
					owner = f.Value.Lookup
				}
				add(p, owner, f.Value.Col)
			case mappings.FieldIds:
				c := f.Embed
				if c == nil {
					continue
				}
				if len(c.Values) > 0 {
					for i, v := range c.Values {
						add(p+"[]."+c.ValueNames[i], c, v)
					}
				} else {
					add(p+"[]", c, c.Value)
				}
			case mappings.FieldAggregate:
				if a := f.Embed.Agg; a != nil && a.Column != "" && f.Embed.Table != nil {
					m[p] = f.Embed.Table.Name + "." + a.Column
				}
			case mappings.FieldEmbed:
				if f.Embed == nil {
					continue
				}
				if f.Embed.Object {
					fields(f.Embed, p+".")
				} else {
					fields(f.Embed, p+"[].")
				}
			}
		}
	}
	fields(root, prefix)
	return m
}

// precisionWarning is the timestamp-precision warning of collection c,
// if its documents hold dates that lose digits.
func precisionWarning(c *Collection) (Warning, bool) {
	if len(c.SubMillisecond) == 0 {
		return Warning{}, false
	}
	var total int64
	var fields, paths []string
	for _, l := range c.SubMillisecond {
		total += l.Count
		paths = append(paths, l.Path)
		f := l.Path
		if l.Column != "" {
			f += " (" + l.Column + ")"
		}
		fields = append(fields, fmt.Sprintf("%s: %d", f, l.Count))
	}
	first := c.SubMillisecond[0]
	return Warning{Severity: "warning", Rule: "timestamp-precision", Collection: c.Name, Path: strings.Join(paths, ", "),
		Message: fmt.Sprintf("%s below the millisecond (%s; e.g. %s in %s): a BSON date holds milliseconds, so migrate writes them rounded toward the past",
			Plural(total, "timestamp value has digits", "timestamp values have digits"), strings.Join(fields, ", "), first.Example, first.Source),
		Suggestion: "to keep every digit, write these timestamps as ISO 8601 text with `timestamp: string` (for the file, or on the field)"}, true
}
