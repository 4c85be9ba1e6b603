package report

import (
	"cmp"
	"slices"

	"github.com/denorm/denorm/mappings"
)

// IndexInfo is one index migrate creates: declared in the mapping, or a
// default of the collection's pattern (with the reason).
type IndexInfo struct {
	Collection string `json:"collection"`
	Name       string `json:"name"`
	// Keys as the mapping writes them: "postId, page desc".
	Keys    string `json:"keys"`
	Unique  bool   `json:"unique,omitempty"`
	Partial string `json:"partial,omitempty"`
	Default bool   `json:"default,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// ShardKeyInfo is a collection's declared shard key.
type ShardKeyInfo struct {
	Collection string `json:"collection"`
	Key        string `json:"key"`
}

// Indexes lists the indexes and shard keys of plan's collections.
func Indexes(plan *mappings.Plan) ([]IndexInfo, []ShardKeyInfo) {
	idx, shards := []IndexInfo{}, []ShardKeyInfo{}
	for _, set := range plan.Indexes {
		for _, ix := range set.Indexes {
			info := IndexInfo{Collection: set.Collection, Name: ix.Name, Keys: ix.KeyText(), Unique: ix.Unique, Default: ix.Default, Reason: ix.Reason}
			if ix.Partial != nil {
				info.Partial = ix.Partial.String()
			}
			idx = append(idx, info)
		}
		if set.ShardKey != nil {
			shards = append(shards, ShardKeyInfo{Collection: set.Collection, Key: set.ShardKeyText()})
		}
	}
	return idx, shards
}

// Totals sums the collections: documents, their bytes (each collection's
// mean size times its documents), dangling references and documents over
// the size limit.
type Totals struct {
	Documents int64 `json:"documents"`
	Bytes     int64 `json:"bytes"`
	Dangling  int64 `json:"dangling"`
	TooLarge  int64 `json:"tooLarge"`
	// Uncovered counts the rows of the tables read that reach no
	// document (Report.Coverage).
	Uncovered int64 `json:"uncovered"`
}

// TotalsOf sums cols.
func TotalsOf(cols []*Collection) Totals {
	var t Totals
	for _, c := range cols {
		t.Documents += c.Documents
		t.Bytes += int64(c.Size.Mean * float64(c.Documents))
		t.TooLarge += c.TooLarge.Count
		t.Dangling += c.Dangling()
	}
	return t
}

// Dangling is the number of dangling references of c's documents.
func (c *Collection) Dangling() int64 {
	var n int64
	for _, r := range c.References {
		n += r.Dangling
	}
	return n
}

// severityRank orders findings: errors first, then warnings, then infos.
var severityRank = map[string]int{"error": 0, "warning": 1, "info": 2}

// BySeverity returns ws sorted by severity, errors first; findings of one
// severity keep their order.
func BySeverity(ws []Warning) []Warning {
	out := slices.Clone(ws)
	slices.SortStableFunc(out, func(a, b Warning) int { return cmp.Compare(severityRank[a.Severity], severityRank[b.Severity]) })
	return out
}

// Count returns how many findings have severity at least as grave as
// severity ("error" counts errors; "warning" errors and warnings).
func Count(ws []Warning, severity string) int {
	n := 0
	for _, w := range ws {
		if severityRank[w.Severity] <= severityRank[severity] {
			n++
		}
	}
	return n
}
