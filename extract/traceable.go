package extract

// Which filters logical sync can follow. A change event names the row
// that changed; a filter is traceable when whether a row passes it depends
// on that row alone (and, through a join table, on the link row), so that
// the row's own change events tell when it starts or stops passing. A
// filter that reads other tables (a subquery), other rows of its own
// table, or the clock or the session (now(), current_date, a STABLE or
// VOLATILE function) can change its verdict without any event on the rows
// it filters: sync --method logical refuses it, and --method diff, which
// rebuilds everything, is the method for it.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// UntraceableFilter is a filter that change events cannot follow.
type UntraceableFilter struct {
	Node *mappings.Node
	// Why says what makes it untraceable.
	Why string
}

// sessionValues are SQL's value functions written without parentheses;
// each depends on the clock or the session.
var sessionValues = regexp.MustCompile(`(?i)\b(current_date|current_time|current_timestamp|localtime|localtimestamp|current_user|session_user|current_role|current_schema|current_catalog|user)\b`)

// calls finds function calls: a name followed by "(".
var calls = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_$]*)\s*\(`)

// UntraceableFilters checks every filter of plan: PostgreSQL plans each
// (EXPLAIN, nothing runs) and a plan that scans another table, the
// filtered table twice or holds a subquery is untraceable; so is a filter
// calling a function that is not IMMUTABLE (any overload of its name) or
// reading a session value (current_date, current_user...).
func UntraceableFilters(ctx context.Context, s *Snapshot, plan *mappings.Plan) ([]UntraceableFilter, error) {
	var out []UntraceableFilter
	var names []string
	byName := map[string][]*mappings.Node{}
	for _, cp := range plan.Collections {
		var err error
		mappings.Walk(cp.Root, func(n *mappings.Node) bool {
			if n.Filter == "" || err != nil {
				return err == nil
			}
			var why string
			why, err = explainFilter(ctx, s, n)
			if why != "" {
				out = append(out, UntraceableFilter{Node: n, Why: why})
			}
			code := stripQuoted(n.Filter)
			if m := sessionValues.FindString(code); m != "" {
				out = append(out, UntraceableFilter{Node: n, Why: fmt.Sprintf("it reads %s, which changes without any row changing", strings.ToLower(m))})
			}
			for _, m := range calls.FindAllStringSubmatch(code, -1) {
				name := strings.ToLower(m[1])
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
				byName[name] = append(byName[name], n)
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		return out, nil
	}
	rows, err := s.Query(ctx, `SELECT DISTINCT proname::text, provolatile::text FROM pg_proc WHERE proname = ANY($1) AND provolatile <> 'i' ORDER BY 1`, names)
	if err != nil {
		return nil, fmt.Errorf("read function volatility: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, vol string
		if err := rows.Scan(&name, &vol); err != nil {
			return nil, fmt.Errorf("read function volatility: %w", err)
		}
		kind := map[string]string{"s": "STABLE", "v": "VOLATILE"}[vol]
		for _, n := range slices.Compact(byName[name]) {
			out = append(out, UntraceableFilter{Node: n, Why: fmt.Sprintf("it calls %s(), which is %s: its result can change without any row changing", name, kind)})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read function volatility: %w", err)
	}
	return out, nil
}

// explainFilter has PostgreSQL plan the node's filtered read and says what
// in the plan makes the filter untraceable ("" when nothing).
func explainFilter(ctx context.Context, s *Snapshot, n *mappings.Node) (string, error) {
	var raw []byte
	sql := fmt.Sprintf("EXPLAIN (VERBOSE, FORMAT JSON) SELECT 1 FROM %s WHERE (%s)", fromClause(n), n.Filter)
	// A statement that fails aborts the transaction: plan inside a
	// savepoint, as CheckQueries does.
	sp, err := s.tx.Begin(ctx)
	if err == nil {
		err = sp.QueryRow(ctx, sql).Scan(&raw)
		if rerr := sp.Rollback(ctx); err == nil {
			err = rerr
		}
	}
	if err != nil {
		return "", fmt.Errorf("%s: plan the filter: %w", n.Path, err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		return "", fmt.Errorf("%s: read the filter's plan: %v", n.Path, err)
	}
	want := map[string]int{n.Table.QualifiedName(): 1}
	if n.Through != nil {
		want[n.Through.Table.QualifiedName()]++
	}
	scans := map[string]int{}
	sub := false
	var walk func(p *planNode)
	walk = func(p *planNode) {
		if p.Relation != "" {
			scans[mappings.QualifiedTableName(p.Schema, p.Relation)]++
		}
		if p.Parent == "SubPlan" || p.Parent == "InitPlan" || p.Subplan != "" || p.Function != "" || p.CTE != "" {
			sub = true
		}
		for i := range p.Plans {
			walk(&p.Plans[i])
		}
	}
	walk(&plans[0].Plan)
	var other []string
	for t, k := range scans {
		if k > want[t] {
			other = append(other, t)
		}
	}
	slices.Sort(other)
	switch {
	case len(other) > 0:
		return fmt.Sprintf("it reads other rows (of %s) than the row it filters: a change of those rows sends no event about this one", strings.Join(other, ", ")), nil
	case sub:
		return "it holds a subquery: its result can change without the filtered row changing", nil
	}
	return "", nil
}

// planNode is what explainFilter reads of EXPLAIN's JSON.
type planNode struct {
	Relation string     `json:"Relation Name"`
	Schema   string     `json:"Schema"`
	Parent   string     `json:"Parent Relationship"`
	Subplan  string     `json:"Subplan Name"`
	Function string     `json:"Function Name"`
	CTE      string     `json:"CTE Name"`
	Plans    []planNode `json:"Plans"`
}

// stripQuoted blanks out string literals and quoted identifiers, so that
// words inside them are not taken for SQL.
func stripQuoted(s string) string {
	b := []byte(s)
	var quote byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
			b[i] = ' '
		case quote != 0 && c == quote:
			if i+1 < len(b) && b[i+1] == quote { // a doubled quote inside
				b[i], b[i+1] = ' ', ' '
				i++
				continue
			}
			quote = 0
			b[i] = ' '
		case quote != 0:
			b[i] = ' '
		}
	}
	return string(b)
}
