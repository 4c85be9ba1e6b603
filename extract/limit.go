package extract

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/mappings"
)

// FirstKeysFilter is a root filter keeping the rows whose key columns
// hold one of the first n distinct keys of table in ascending order,
// among the rows filter (the mapping's filter, "" for none) keeps, and
// filter itself: migrate --limit's trial runs (the first n documents, or
// the pages of the first n parents of a bucket collection). It reads the
// columns unqualified, so it fits every query that reads the root table.
func FirstKeysFilter(table *mappings.Table, columns []string, filter string, n int) string {
	refs := make([]string, len(columns))
	for i, c := range columns {
		refs[i] = pgx.Identifier{c}.Sanitize()
	}
	list := strings.Join(refs, ", ")
	where := ""
	if filter != "" {
		where = " WHERE (" + filter + ")"
	}
	cond := fmt.Sprintf("(%s) IN (SELECT DISTINCT %s FROM %s%s ORDER BY %s LIMIT %d)", list, list, tableRef(table), where, list, n)
	if filter != "" {
		cond = "(" + filter + ") AND " + cond
	}
	return cond
}
