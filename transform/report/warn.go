package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Thresholds of the modeling rules (docs/plan-advise.md, "Before migrating": the
// table of warnings).
const (
	// UnboundedChildren: an embedded array or id array longer than this in
	// some document is treated as unbounded (one-to-many, not one-to-few).
	UnboundedChildren = 100
	// HotUpdates: a table whose rows were updated more than this many times
	// each on average (and at least MinUpdates times in all) changes often.
	HotUpdates = 1.0
	MinUpdates = 100
)

// Warnings applies the modeling rules to the plan and the collections'
// figures. stats is keyed by qualified table name ("public.t"); missing
// tables have no activity figures.
func Warnings(plan *mappings.Plan, cols []*Collection, stats map[string]mappings.TableActivity, maxDocSize int) []Warning {
	var out []Warning
	decimalWarned := map[string]bool{}
	for i, cp := range plan.Collections {
		if i >= len(cols) {
			break
		}
		c := cols[i]
		if c.TooLarge.Count > 0 {
			out = append(out, Warning{Severity: "error", Rule: "size-limit", Collection: c.Name,
				Message:    fmt.Sprintf("%s the target's size limit of %s; the largest is %s from %s", Plural(c.TooLarge.Count, "document exceeds", "documents exceed"), Bytes(maxDocSize), Bytes(c.Size.Max), c.Largest.Source),
				Suggestion: "reference or bucket the largest arrays (see the arrays above), or embed only a bounded subset (limit)"})
		} else if maxDocSize > 0 && c.Size.Max > maxDocSize/2 {
			out = append(out, Warning{Severity: "warning", Rule: "size-limit", Collection: c.Name,
				Message:    fmt.Sprintf("the largest document (%s, from %s) is over half the size limit of %s", Bytes(c.Size.Max), c.Largest.Source, Bytes(maxDocSize)),
				Suggestion: "growth will push it over: bound its arrays"})
		}
		var decimals []string
		for _, f := range plan.DecimalFields() {
			if f.Collection == cp.Name && !slices.Contains(decimals, f.Path) {
				decimals = append(decimals, f.Path)
			}
		}
		if len(decimals) > 0 && !decimalWarned[cp.Name] {
			decimalWarned[cp.Name] = true
			out = append(out, Warning{Severity: "info", Rule: "decimal128", Collection: c.Name, Path: strings.Join(decimals, ", "),
				Message:    fmt.Sprintf("NUMERIC is written as BSON Decimal128 (numeric: decimal, the default) in %s: MongoDB stores it exactly, FerretDB 1.24 cannot store it at all (migrate and validate --target refuse such a mapping there)", strings.Join(decimals, ", ")),
				Suggestion: "for FerretDB set `numeric: double` (may round) or `numeric: string` (exact text), for the file or per field"})
		}
		if w, ok := precisionWarning(c); ok {
			out = append(out, w)
		}
		if u := c.Unstorable; u != nil && u.Count > 0 {
			out = append(out, Warning{Severity: "error", Rule: "unstorable", Collection: c.Name,
				Message:    fmt.Sprintf("%d documents cannot be stored as built; migrate rejects their rows (exit 3, listed with --rejects): the first, from %s: %s", u.Count, u.Docs[0].Source, u.Docs[0].Reason),
				Suggestion: "filter those rows, or reshape the jsonb value or pivot with an sql: field (see docs/migrate.md, \"Rejected rows, not failed runs\")"})
		}
		arrays := map[string]ArrayStat{}
		for _, a := range c.Arrays {
			arrays[a.Path] = a
		}
		// copied: the tables a node copies fields from by lookup, keyed
		// "node path|table": a reference there already has its fields
		// copied beside it (partial denormalization done).
		copied := map[string]bool{}
		mappings.WalkFields(cp.Root, func(f *mappings.FieldPlan, segs []string) {
			if f.Kind == mappings.FieldColumn && f.Value.Lookup != nil {
				copied[pathText(segs[:len(segs)-1])+"|"+f.Value.Lookup.Table.QualifiedName()] = true
			}
		})
		mappings.WalkFields(cp.Root, func(f *mappings.FieldPlan, segs []string) {
			path := pathText(segs)
			switch f.Kind {
			case mappings.FieldEmbed:
				child := f.Embed
				ts, hasStats := stats[child.Table.QualifiedName()]
				if !child.Object && child.Limit == 0 {
					if a, ok := arrays[path]; ok && a.Max > UnboundedChildren {
						msg := fmt.Sprintf("embedded relation %s (table %s) is unbounded: up to %d items per document (p99 %d, median %d; longest in %s)", path, tableName(child.Table), a.Max, a.P99, a.P50, a.MaxSource)
						if hasStats && ts.Inserts > 0 {
							msg += fmt.Sprintf("; and growing: %d rows inserted since statistics reset", ts.Inserts)
						}
						out = append(out, Warning{Severity: "warning", Rule: "unbounded-embed", Collection: c.Name, Path: path, Message: msg,
							Suggestion: "embed only the most recent few (orderBy + limit) and store all of them in a bucket collection (pattern 2), or reference the parent from the child's own collection"})
					}
				}
				if hasStats && hot(ts) {
					out = append(out, Warning{Severity: "warning", Rule: "hot-embed", Collection: c.Name, Path: path,
						Message:    fmt.Sprintf("embedded table %s changes often: %d updates on %d rows since statistics reset (%.1f per row); every change rewrites every document holding a copy", tableName(child.Table), ts.Updates, ts.Rows, perRow(ts)),
						Suggestion: "reference it (a column with ref:) and keep it once in its own collection (pattern 3)"})
				}
			case mappings.FieldIds:
				ids := f.Embed
				if ids.Limit == 0 {
					if a, ok := arrays[path]; ok && a.Max > UnboundedChildren {
						out = append(out, Warning{Severity: "warning", Rule: "unbounded-ids", Collection: c.Name, Path: path,
							Message:    fmt.Sprintf("id array %s grows without bound: up to %d ids per document (p99 %d; longest in %s)", path, a.Max, a.P99, a.MaxSource),
							Suggestion: "move the reference to the other side: each related document holds this document's id (pattern 4)"})
					}
				}
			case mappings.FieldColumn:
				if f.Value.Lookup != nil {
					lt := f.Value.Lookup.Table
					if ts, ok := stats[lt.QualifiedName()]; ok && hot(ts) {
						out = append(out, Warning{Severity: "warning", Rule: "hot-copy", Collection: c.Name, Path: path,
							Message:    fmt.Sprintf("field %s copies from table %s, which changes often: %d updates on %d rows (%.1f per row)", path, tableName(lt), ts.Updates, ts.Rows, perRow(ts)),
							Suggestion: "reference it instead, or make sure sync keeps the copies current"})
					}
				}
				if rp := plan.RefTarget(f.RefCollection); rp != nil {
					rt := rp.Root.Table
					ts, ok := stats[rt.QualifiedName()]
					if ok && !hot(ts) && !copied[pathText(segs[:len(segs)-1])+"|"+rt.QualifiedName()] {
						out = append(out, Warning{Severity: "info", Rule: "reference-read-with-parent", Collection: c.Name, Path: path,
							Message:    fmt.Sprintf("%s references %s (table %s), which rarely changes (%d updates on %d rows)", path, rp.Name, tableName(rt), ts.Updates, ts.Rows),
							Suggestion: fmt.Sprintf("if every read of %s also reads the referenced %s, copy the few fields it shows next to the reference (partial denormalization, pattern 6)", c.Name, rp.Name)})
					}
				}
			}
		})
		if cp.Bucket == nil && isJoinTable(cp.Root.Table) {
			out = append(out, Warning{Severity: "warning", Rule: "join-table-collection", Collection: c.Name,
				Message:    fmt.Sprintf("table %s is a join table (its key is made of foreign keys and it holds no other data) copied as its own collection: every read costs two extra queries", tableName(cp.Root.Table)),
				Suggestion: "drop this collection and declare a link: id arrays on one or both sides (pattern 5)"})
		}
		for _, r := range c.References {
			if r.Dangling > 0 {
				out = append(out, Warning{Severity: "warning", Rule: "dangling-reference", Collection: c.Name, Path: r.Path,
					Message:    fmt.Sprintf("%d of %d references %s point to no row of %s (for example %s in %s)", r.Dangling, r.Checked, r.Path, r.Table, r.Examples[0].Value, r.Examples[0].Source),
					Suggestion: "fix the source rows, or filter them out of the mapping"})
			}
		}
	}
	if out == nil {
		out = []Warning{}
	}
	return out
}

func hot(ts mappings.TableActivity) bool {
	return ts.Updates >= MinUpdates && perRow(ts) > HotUpdates
}

func perRow(ts mappings.TableActivity) float64 {
	return float64(ts.Updates) / float64(max(ts.Rows, 1))
}

// isJoinTable: the primary key is made of foreign key columns, there are
// at least two foreign keys, and at most one other column (a timestamp).
func isJoinTable(t *mappings.Table) bool {
	if len(t.ForeignKeys) < 2 || len(t.PrimaryKey) == 0 {
		return false
	}
	fkCols := map[string]bool{}
	for _, fk := range t.ForeignKeys {
		for _, c := range fk.Columns {
			fkCols[c] = true
		}
	}
	for _, c := range t.PrimaryKey {
		if !fkCols[c] {
			return false
		}
	}
	other := 0
	for _, c := range t.Columns {
		if !fkCols[c.Name] {
			other++
			if c.Category != "D" {
				return false
			}
		}
	}
	return other <= 1
}

// IsJoinTable reports whether t has the shape of a join table.
func IsJoinTable(t *mappings.Table) bool { return isJoinTable(t) }

// Bytes formats a size: 512 B, 1.5 KiB, 16.0 MiB.
func Bytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
