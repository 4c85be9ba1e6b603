package extract

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// relationKinds names pg_class.relkind values a name may resolve to that
// denorm cannot read.
var relationKinds = map[string]string{
	"i": "an index", "I": "a partitioned index", "S": "a sequence", "t": "a TOAST table", "c": "a composite type",
}

// readable reports whether relkind is a relation denorm reads: a table
// (plain or partitioned), a view, a materialized view or a foreign table.
func readable(kind string) bool { return strings.Contains("rpvmf", kind) && kind != "" }

// resolveNames resolves the mapping's table names as PostgreSQL does for
// the connected role (see ReadCatalog), filling cat.Names and
// cat.SearchPath; it returns the tables to describe, each once.
func resolveNames(ctx context.Context, q Querier, cat *mappings.Catalog, written []string) ([]mappings.TableName, error) {
	parsed := map[string]mappings.TableName{}
	for _, w := range written {
		n, err := mappings.ParseTableName(w)
		if err != nil {
			cat.Names[w] = mappings.Resolved{Problem: err.Error()}
			continue
		}
		parsed[w] = n
	}
	// The role, and the schemas PostgreSQL searches for an unqualified
	// name, in order: the search_path with $user expanded, schemas the
	// role cannot use left out, pg_catalog where it applies.
	rows, err := q.Query(ctx, "SELECT current_user::text, current_schemas(true)::text[]")
	if err != nil {
		return nil, fmt.Errorf("read the search_path: %w", err)
	}
	for rows.Next() {
		if err := rows.Scan(&cat.Role, &cat.SearchPath); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the search_path: %w", err)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the search_path: %w", err)
	}
	// Every relation whose schema and name equal a candidate's when both
	// are folded to lower case: exact matches resolve, the others give
	// hints about capitals.
	var schemas, names []string
	for _, n := range parsed {
		if n.Schema != "" {
			schemas, names = append(schemas, n.Schema), append(names, n.Name)
			continue
		}
		for _, s := range cat.SearchPath {
			schemas, names = append(schemas, s), append(names, n.Name)
		}
	}
	type rel struct{ schema, name, kind string }
	exact := map[[2]string]string{}
	folded := map[[2]string][]rel{}
	if len(schemas) > 0 {
		rows, err := q.Query(ctx, `
SELECT n.nspname::text, c.relname::text, c.relkind::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE (lower(n.nspname), lower(c.relname)) IN (SELECT lower(s), lower(r) FROM unnest($1::text[], $2::text[]) AS w(s, r))
ORDER BY 1, 2`, schemas, names)
		if err != nil {
			return nil, fmt.Errorf("resolve table names: %w", err)
		}
		for rows.Next() {
			var r rel
			if err := rows.Scan(&r.schema, &r.name, &r.kind); err != nil {
				rows.Close()
				return nil, fmt.Errorf("resolve table names: %w", err)
			}
			exact[[2]string{r.schema, r.name}] = r.kind
			k := [2]string{strings.ToLower(r.schema), strings.ToLower(r.name)}
			folded[k] = append(folded[k], r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("resolve table names: %w", err)
		}
	}
	// capitals is the hint for a name that matches only when case is
	// ignored: the tables it would have meant, written as SQL names them.
	capitals := func(n mappings.TableName, inSchemas []string) string {
		var hits []string
		for _, s := range inSchemas {
			for _, r := range folded[[2]string{strings.ToLower(s), strings.ToLower(n.Name)}] {
				if !readable(r.kind) {
					continue
				}
				name := mappings.QuoteIdent(r.name)
				if n.Schema != "" {
					name = mappings.QualifiedTableName(r.schema, r.name)
				}
				if !slices.Contains(hits, name) {
					hits = append(hits, name)
				}
			}
		}
		if len(hits) == 0 {
			return ""
		}
		example := hits[0]
		if strings.HasPrefix(example, `"`) {
			example = "'" + example + "'" // YAML reads a value starting with " as its own quoting
		}
		return fmt.Sprintf("; %s differs only in case: write it so (table: %s), as SQL does (an unquoted name is folded to lower case, a quoted one keeps its case)", strings.Join(hits, " or "), example)
	}
	var out []mappings.TableName
	add := func(w string, schema, name string) {
		key := mappings.QualifiedTableName(schema, name)
		kind := exact[[2]string{schema, name}]
		if !readable(kind) {
			cat.Names[w] = mappings.Resolved{Problem: fmt.Sprintf("resolves to %s, which is %s, not a table, view, materialized view or foreign table", key, relationKinds[kind])}
			return
		}
		r := cat.Names[w]
		r.Table = key
		cat.Names[w] = r
		for _, t := range out {
			if t.Schema == schema && t.Name == name {
				return
			}
		}
		out = append(out, mappings.TableName{Schema: schema, Name: name})
	}
	for _, w := range written {
		n, ok := parsed[w]
		if !ok {
			continue
		}
		if n.Schema != "" {
			if _, ok := exact[[2]string{n.Schema, n.Name}]; ok {
				add(w, n.Schema, n.Name)
				continue
			}
			cat.Names[w] = mappings.Resolved{Problem: fmt.Sprintf("the source database has no table named %s%s", n, capitals(n, []string{n.Schema}))}
			continue
		}
		first := ""
		var shadowed []string
		for _, s := range cat.SearchPath {
			kind, ok := exact[[2]string{s, n.Name}]
			switch {
			case !ok:
			case first == "":
				first = s
			case readable(kind):
				shadowed = append(shadowed, mappings.QualifiedTableName(s, n.Name))
			}
		}
		if first == "" {
			hint := capitals(n, cat.SearchPath)
			if hint == "" {
				hint = "; qualify the name (schema.table) if the table is in another schema"
			}
			cat.Names[w] = mappings.Resolved{Problem: fmt.Sprintf("no schema on the role's search_path (%s) holds a table named %s%s",
				strings.Join(quoteAll(cat.SearchPath), ", "), n, hint)}
			continue
		}
		cat.Names[w] = mappings.Resolved{Shadowed: shadowed}
		add(w, first, n.Name)
	}
	return out, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = mappings.QuoteIdent(s)
	}
	return out
}

// readInheritance fills the Children of the plain and foreign tables
// among tables (by oid): every table inheriting from one, at any depth,
// with its row estimate. Partitions are not children: a partitioned table
// is read whole.
func readInheritance(ctx context.Context, q Querier, tables map[int64]*mappings.Table) error {
	var ids []int64
	for oid, t := range tables {
		if t.OwnRowsOnly() {
			ids = append(ids, oid)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, `
WITH RECURSIVE tree(root, relid) AS (
  SELECT i.inhparent, i.inhrelid FROM pg_inherits i WHERE i.inhparent = ANY($1::oid[])
  UNION
  SELECT t.root, i.inhrelid FROM tree t JOIN pg_inherits i ON i.inhparent = t.relid
)
SELECT t.root::int8, n.nspname::text, c.relname::text, CASE WHEN c.reltuples >= 0 THEN c.reltuples::int8 ELSE -1 END
FROM tree t JOIN pg_class c ON c.oid = t.relid JOIN pg_namespace n ON n.oid = c.relnamespace
ORDER BY 1, 2, 3`, ids)
	if err != nil {
		return fmt.Errorf("read inheritance children: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			root         int64
			schema, name string
			est          int64
		)
		if err := rows.Scan(&root, &schema, &name, &est); err != nil {
			return fmt.Errorf("read inheritance children: %w", err)
		}
		t := tables[root]
		t.Children = append(t.Children, mappings.ChildTable{Name: mappings.QualifiedTableName(schema, name), Estimate: est})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read inheritance children: %w", err)
	}
	return nil
}

// readRowSecurity sets RowSecurity on the tables (by oid) whose
// row-level security applies to the connected role, as PostgreSQL
// decides it (check_enable_rls): the table has it enabled, and the role
// is not a superuser, has no BYPASSRLS, and does not own the table
// (directly or through a role it inherits), unless the table forces row
// security on its owner too. The policies listed are those that let the
// role read rows (SELECT or ALL, for PUBLIC or a role it inherits).
func readRowSecurity(ctx context.Context, q Querier, tables map[int64]*mappings.Table) error {
	ids := make([]int64, 0, len(tables))
	for oid := range tables {
		ids = append(ids, oid)
	}
	rows, err := q.Query(ctx, `
SELECT c.oid::int8,
       ARRAY(SELECT p.polname::text || coalesce(' (USING ' || pg_get_expr(p.polqual, p.polrelid) || ')', '')
             FROM pg_policy p
             WHERE p.polrelid = c.oid AND p.polcmd IN ('r', '*')
               AND (0::oid = ANY(p.polroles) OR EXISTS (SELECT 1 FROM unnest(p.polroles) AS pr(r) WHERE pg_has_role(current_user, pr.r, 'USAGE')))
             ORDER BY p.polname)
FROM pg_class c
JOIN pg_roles r ON r.rolname = current_user
WHERE c.oid = ANY($1::oid[]) AND c.relrowsecurity
  AND NOT (r.rolsuper OR r.rolbypassrls OR (pg_has_role(current_user, c.relowner, 'USAGE') AND NOT c.relforcerowsecurity))`, ids)
	if err != nil {
		return fmt.Errorf("read row-level security: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			oid      int64
			policies []string
		)
		if err := rows.Scan(&oid, &policies); err != nil {
			return fmt.Errorf("read row-level security: %w", err)
		}
		tables[oid].RowSecurity = &mappings.RowSecurity{Policies: policies}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read row-level security: %w", err)
	}
	return nil
}
