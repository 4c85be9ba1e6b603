package mappings

import (
	"fmt"
	"strings"
)

// Tables: every table a mapping names is resolved against the catalog
// here, with notices of what reading it leaves out (a table of the same
// name in another schema of the search_path, rows row-level security
// hides, inheritance children).

// table is the table a name of the mapping resolves to, or nil after
// reporting why there is none.
func (r *resolver) table(name string, p Pos) *Table {
	t := r.cat.Table(name)
	if t != nil {
		r.notice(name, t, p)
		return t
	}
	if res, ok := r.cat.Names[name]; ok && res.Problem != "" {
		r.add(p, "table %s: %s", quoteWritten(name), res.Problem)
		return nil
	}
	if _, err := ParseTableName(name); err != nil {
		r.add(p, "table %s: %v", quoteWritten(name), err)
		return nil
	}
	r.add(p, "table %s does not exist in the source database", quoteWritten(name))
	return nil
}

// notice records what the user should know of table t, named name at p:
// once per name, that other schemas of the search_path hold a table of
// that name too; once per table, that its inheritance children are not
// read.
func (r *resolver) notice(name string, t *Table, p Pos) {
	q := t.QualifiedName()
	if res := r.cat.Names[name]; len(res.Shadowed) > 0 && !r.noticed["name "+name] {
		r.noticed["name "+name] = true
		r.notices = append(r.notices, Notice{File: r.file.Path, Pos: p, Collection: r.where, Rule: "search-path", Table: q,
			Msg: fmt.Sprintf("table %s resolves to %s, the first on the role's search_path (%s); %s %s too", quoteWritten(name), q,
				strings.Join(quoteIdents(r.cat.SearchPath), ", "), strings.Join(res.Shadowed, " and "), plural(len(res.Shadowed), "exists", "exist")),
			Suggestion: "qualify the name (schema.table) to say which one is meant whatever the search_path"})
	}
	if t.RowSecurity != nil && !r.noticed["rls "+q] {
		r.noticed["rls "+q] = true
		policies := "no policy lets it read any row"
		if len(t.RowSecurity.Policies) > 0 {
			policies = plural(len(t.RowSecurity.Policies), "policy ", "policies ") + strings.Join(t.RowSecurity.Policies, ", ")
		}
		r.notices = append(r.notices, Notice{File: r.file.Path, Pos: p, Collection: r.where, Rule: "row-security", Table: q,
			Msg:        fmt.Sprintf("row-level security shows the source role only some rows of %s (%s): what is read holds only those", q, policies),
			Suggestion: "connect as a role that reads every row (the table's owner, or a role with BYPASSRLS) to migrate them all"})
	}
	if len(t.Children) > 0 && t.OwnRowsOnly() && !r.noticed["table "+q] {
		r.noticed["table "+q] = true
		children := make([]string, len(t.Children))
		for i, c := range t.Children {
			children[i] = c.Name
			if c.Estimate >= 0 {
				children[i] += fmt.Sprintf(" (~%d rows)", c.Estimate)
			}
		}
		r.notices = append(r.notices, Notice{File: r.file.Path, Pos: p, Collection: r.where, Rule: "inheritance", Table: q,
			Msg: fmt.Sprintf("reads only %s's own rows; its inheritance %s %s %s not read", q, plural(len(children), "child", "children"),
				strings.Join(children, ", "), plural(len(children), "is", "are")),
			Suggestion: "map a child as its own collection, or a view that unions them"})
	}
}

func quoteIdents(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = QuoteIdent(s)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
