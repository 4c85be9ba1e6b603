package mappings

import (
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// Computed fields use expr-lang (github.com/expr-lang/expr): a small,
// well-kept, side-effect-free expression language. An expression sees the
// row's columns by their SQL names and each lookup as an object of its
// columns (type.name); NULL is nil.

// compileExpr compiles src for node n and returns the variables it reads.
// Unknown names are errors, so typos surface in validate.
func compileExpr(src string, n *Node, lookups map[string]*Node, r *resolver) (*vm.Program, []ExprVar, error) {
	env := map[string]any{}
	for _, c := range n.Table.Columns {
		env[c.Name] = exprZero(c)
	}
	for name, ln := range lookups {
		cols := map[string]any{}
		for _, c := range ln.Table.Columns {
			cols[c.Name] = exprZero(c)
		}
		env[name] = cols
	}
	prog, err := compileChecked(src, env)
	if err != nil {
		return nil, nil, err
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, nil, err
	}
	u := &usage{lookups: lookups, cols: map[string]bool{}, members: map[string]map[string]bool{}}
	ast.Walk(&tree.Node, u)
	var vars []ExprVar
	// In name order: need adds columns to the node, whose SELECT order
	// must not depend on map iteration.
	for _, name := range slices.Sorted(maps.Keys(u.cols)) {
		if ln, ok := lookups[name]; ok {
			v := ExprVar{Name: name, Lookup: ln, Cols: map[string]int{}}
			members := u.members[name]
			if u.whole[name] {
				members = nil
			}
			for _, c := range ln.Table.Columns {
				if members == nil || members[c.Name] {
					v.Cols[c.Name] = r.need(ln, c.Name)
				}
			}
			vars = append(vars, v)
			continue
		}
		if n.Table.Column(name) != nil {
			vars = append(vars, ExprVar{Name: name, Col: r.need(n, name)})
		}
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].Name < vars[j].Name })
	return prog, vars, nil
}

// exprZero is a value of the Go type an expression sees for column c,
// so that expr checks types at compile time. NUMERIC is a float64 inside
// expressions; json, arrays and bytea are untyped.
func exprZero(c Column) any {
	switch c.TypeName {
	case "int2", "int4":
		return int32(0)
	case "int8":
		return int64(0)
	case "float4", "float8", "numeric":
		return float64(0)
	case "bool":
		return false
	case "date", "timestamp", "timestamptz":
		return time.Time{}
	case "json", "jsonb", "bytea":
		return nil
	}
	if c.Category == "A" {
		return nil
	}
	return ""
}

// usage collects the identifiers an expression reads, and for lookups the
// members read (nil members: the whole lookup is used).
type usage struct {
	lookups map[string]*Node
	cols    map[string]bool
	members map[string]map[string]bool
	whole   map[string]bool
}

func (u *usage) Visit(node *ast.Node) {
	switch x := (*node).(type) {
	case *ast.IdentifierNode:
		u.cols[x.Value] = true
	case *ast.MemberNode:
		id, ok := x.Node.(*ast.IdentifierNode)
		if !ok {
			return
		}
		if _, isLookup := u.lookups[id.Value]; !isLookup {
			return
		}
		if s, ok := x.Property.(*ast.StringNode); ok {
			if u.members[id.Value] == nil {
				u.members[id.Value] = map[string]bool{}
			}
			u.members[id.Value][s.Value] = true
			return
		}
		// A computed member: the whole lookup is needed.
		if u.whole == nil {
			u.whole = map[string]bool{}
		}
		u.whole[id.Value] = true
	}
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// mergeVars adds vars not yet in have.
func mergeVars(have, vars []ExprVar) []ExprVar {
	for _, v := range vars {
		i := slices.IndexFunc(have, func(h ExprVar) bool { return h.Name == v.Name })
		if i < 0 {
			have = append(have, v)
			continue
		}
		if v.Lookup != nil {
			for c, idx := range v.Cols {
				have[i].Cols[c] = idx
			}
		}
	}
	return have
}
