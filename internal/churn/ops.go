package churn

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The operations. Each runs inside a savepoint; a PostgreSQL error or
// errNothing rolls it back (Generator.do).

// writable tells whether an insert or update may set c.
func writable(c *column) bool { return !c.generated && !c.identityAlways }

// ordinary columns are updated by update: neither key nor foreign key.
func ordinary(c *column) bool { return writable(c) && !c.pk && !c.fk && !c.serial }

// shuffled returns a shuffled copy.
func shuffled[T any](g *Generator, s []T) []T {
	out := slices.Clone(s)
	g.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// insert adds a row: foreign keys from existing parents, ordering columns
// between two siblings of the same parent when it has two, keys that are
// not made by the database generated, the rest fresh or copied.
func (g *Generator) insert(ctx context.Context, t *table, c *Counts) error {
	vals := map[*column]*string{}
	tmplRows, err := g.sample(ctx, t, 1, "")
	if err != nil {
		return err
	}
	var tmpl row
	if len(tmplRows) > 0 {
		tmpl = tmplRows[0]
	}
	tmplValue := func(col *column) *string {
		if tmpl == nil {
			return nil
		}
		return t.value(tmpl, col)
	}
	// Parents.
	for _, fk := range shuffled(g, t.fks) {
		var setCols, setRefs []*column
		var setVals []*string
		for i, col := range fk.cols {
			if v, ok := vals[col]; ok {
				setCols, setRefs, setVals = append(setCols, col), append(setRefs, fk.refs[i]), append(setVals, v)
			}
		}
		if len(setCols) == len(fk.cols) {
			continue
		}
		nullable := len(setCols) == 0 && !slices.ContainsFunc(fk.cols, func(c *column) bool { return c.notNull })
		if nullable && g.rng.IntN(8) == 0 {
			for _, col := range fk.cols {
				vals[col] = nil
			}
			continue
		}
		cond, args := conds(setRefs, setVals, nil)
		parents, err := g.sample(ctx, fk.parent, 1, and(cond, notNull(fk.refs)), args...)
		if err != nil {
			return err
		}
		if len(parents) == 0 {
			if !nullable {
				return nothing("no parent row in %s", fk.parent.name)
			}
			for _, col := range fk.cols {
				vals[col] = nil
			}
			continue
		}
		for i, col := range fk.cols {
			vals[col] = fk.parent.value(parents[0], fk.refs[i])
		}
	}
	// Siblings: the new row lands between two rows of the same parent in
	// every ordering column (a comment created between two others). The
	// first foreign key, in random order, whose parent has two rows.
	middle := false
	for _, fk := range shuffled(g, t.fks) {
		fkVals := make([]*string, len(fk.cols))
		known := true
		for i, col := range fk.cols {
			fkVals[i] = vals[col]
			known = known && fkVals[i] != nil
		}
		if !known {
			continue
		}
		cond, args := conds(fk.cols, fkVals, nil)
		sibs, err := g.sample(ctx, t, 2, cond, args...)
		if err != nil {
			return err
		}
		if len(sibs) < 2 {
			continue
		}
		for _, col := range t.cols {
			if _, done := vals[col]; done || !col.kind.orderable() || !writable(col) || col.serial || col.volatileDefault || col.unique {
				continue
			}
			a, b := t.value(sibs[0], col), t.value(sibs[1], col)
			if a == nil || b == nil {
				continue
			}
			if v, ok := between(g.rng, col, *a, *b); ok && (!col.partKey || inBounds(col, t.bounds, v)) {
				vals[col] = ptr(v)
				middle = true
			}
		}
		break
	}
	// Keys the database does not make.
	for _, col := range t.pk {
		if _, done := vals[col]; done || col.serial || !writable(col) {
			continue
		}
		v, err := g.newKey(ctx, t, col, tmplValue(col))
		if err != nil {
			return err
		}
		vals[col] = v
	}
	// The rest.
	for _, col := range t.cols {
		if _, done := vals[col]; done || !writable(col) || col.serial {
			continue
		}
		v, ok := g.insertValue(t, col, tmplValue(col))
		if !ok {
			if col.hasDefault || !col.notNull {
				continue
			}
			return nothing("a NOT NULL column without default has no value")
		}
		vals[col] = v
	}
	if k := t.partKey; k != nil {
		if v, ok := vals[k]; ok && (v == nil || !inBounds(k, t.bounds, *v)) {
			if p := inPartition(g.rng, k, t.bounds); p != nil {
				vals[k] = p
			}
		}
	}
	var names, places []string
	var args []*string
	for _, col := range t.cols {
		v, ok := vals[col]
		if !ok {
			continue
		}
		args = append(args, v)
		names = append(names, col.ident)
		places = append(places, fmt.Sprintf("$%d::text::%s", len(args), col.typ))
	}
	sql := "INSERT INTO " + t.ident + " DEFAULT VALUES"
	if len(names) > 0 {
		sql = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", t.ident, strings.Join(names, ", "), strings.Join(places, ", "))
	}
	if _, err := g.exec(ctx, sql, args...); err != nil {
		return err
	}
	c.Inserted++
	if middle {
		c.Middle++
	}
	return nil
}

// newKey makes a value for a key column the database does not fill:
// integers anywhere up to a little past the largest (so new rows also
// land between old ones), texts shaped like an existing key ("b" + a
// number after "b1"), other types as any value.
func (g *Generator) newKey(ctx context.Context, t *table, col *column, like *string) (*string, error) {
	switch col.kind {
	case kInt:
		var top *int64
		if err := g.cur.QueryRow(ctx, "SELECT max(x."+col.ident+")::int8 FROM "+t.ident+" x").Scan(&top); err != nil {
			return nil, err
		}
		_, typeMax := intRange(col.bits)
		if top == nil || *top < 1 {
			return ptr(strconv.FormatInt(1+g.rng.Int64N(10), 10)), nil
		}
		if g.rng.IntN(2) == 0 && *top < typeMax-20 { // just past the largest
			return ptr(strconv.FormatInt(*top+1+g.rng.Int64N(20), 10)), nil
		}
		// anywhere: in a gap left by deletes, the row lands among the others
		return ptr(strconv.FormatInt(1+g.rng.Int64N(min(*top+*top/5+10, typeMax-1)), 10)), nil
	case kText:
		prefix := ""
		if like != nil {
			prefix = strings.TrimRightFunc(*like, func(r rune) bool { return r >= '0' && r <= '9' })
		}
		if prefix == "" || prefix == *like {
			prefix = word(g.rng, true)
		}
		v := prefix + strconv.Itoa(1+g.rng.IntN(999))
		if col.maxLen > 0 && len(v) > col.maxLen {
			v = v[len(v)-col.maxLen:]
		}
		return ptr(v), nil
	}
	if like != nil && col.kind.orderable() {
		return perturb(g.rng, col, *like), nil
	}
	if v := fresh(g.rng, col); v != nil {
		return v, nil
	}
	return like, nil
}

// insertValue makes a new row's value of an ordinary column; ok is false
// when there is none to give (no generator and nothing to copy).
func (g *Generator) insertValue(t *table, col *column, like *string) (*string, bool) {
	if col.partKey {
		if v := inPartition(g.rng, col, t.bounds); v != nil {
			return v, true
		}
	}
	if !col.notNull && g.rng.IntN(10) == 0 {
		return nil, true
	}
	copyable := like != nil && !col.unique && !col.volatileDefault
	// Domains and checked columns: their constraints are not parsed, so
	// prefer values near existing ones.
	if copyable && (col.domain || col.checked || col.kind == kOther) && g.rng.IntN(10) < 9 {
		if col.kind.orderable() && g.rng.IntN(2) == 0 {
			return perturb(g.rng, col, *like), true
		}
		return like, true
	}
	if copyable && g.rng.IntN(4) == 0 {
		return like, true // repeated values: filters and lookups see known ones
	}
	if v := fresh(g.rng, col); v != nil {
		return v, true
	}
	if copyable {
		return like, true
	}
	return nil, false
}

// updateValue makes a new value for col of a row holding old, with
// other a value of the same column in another row.
func (g *Generator) updateValue(t *table, col *column, old, other *string) *string {
	if col.partKey {
		if old != nil {
			if v := perturb(g.rng, col, *old); v != nil && inBounds(col, t.bounds, *v) {
				return v
			}
		}
		return inPartition(g.rng, col, t.bounds)
	}
	if col.volatileDefault {
		// Its values come from the clock: deriving from them would not replay.
		if v := fresh(g.rng, col); v != nil {
			return v
		}
	}
	if !col.notNull && g.rng.IntN(10) == 0 {
		return nil
	}
	careful := col.domain || col.checked || col.kind == kOther
	x := g.rng.IntN(10)
	switch {
	case other != nil && !col.unique && (x < 3 || careful && x < 6):
		return other
	case old != nil && col.kind.orderable() && (x < 6 || careful):
		return perturb(g.rng, col, *old)
	}
	if v := fresh(g.rng, col); v != nil {
		return v
	}
	if other != nil {
		return other
	}
	return old
}

// someRows samples up to n rows of t, at least one.
func (g *Generator) someRows(ctx context.Context, t *table, n int) ([]row, error) {
	rows, err := g.sample(ctx, t, n, "")
	if err == nil && len(rows) == 0 {
		err = nothing("the table is empty")
	}
	return rows, err
}

// changeRows samples up to n rows to change. In a sparse round it
// prefers rows other rows point to, so that the change has to reach
// other documents (an author with books, a post with comments).
func (g *Generator) changeRows(ctx context.Context, t *table, n int) ([]row, error) {
	if g.sparse && len(t.refs) > 0 {
		fk := t.refs[g.rng.IntN(len(t.refs))]
		parts := make([]string, len(fk.cols))
		for i := range fk.cols {
			parts[i] = fmt.Sprintf("c.%s = x.%s", fk.cols[i].ident, fk.refs[i].ident)
		}
		rows, err := g.sample(ctx, t, n, fmt.Sprintf("EXISTS (SELECT 1 FROM %s c WHERE %s)", fk.child.ident, strings.Join(parts, " AND ")))
		if err != nil || len(rows) > 0 {
			return rows, err
		}
	}
	return g.someRows(ctx, t, n)
}

// update changes one or two ordinary columns of a row.
func (g *Generator) update(ctx context.Context, t *table, c *Counts) error {
	var cands []*column
	for _, col := range t.cols {
		if ordinary(col) {
			cands = append(cands, col)
		}
	}
	if len(cands) == 0 {
		if len(t.fks) > 0 {
			return g.move(ctx, t, c)
		}
		return g.rekey(ctx, t, c)
	}
	rows, err := g.changeRows(ctx, t, 2)
	if err != nil {
		return err
	}
	cols := shuffled(g, cands)[:1+g.rng.IntN(min(2, len(cands)))]
	var sets []string
	var args []*string
	renamed := false
	for _, col := range cols {
		var other *string
		if len(rows) > 1 {
			other = t.value(rows[1], col)
		}
		args = append(args, g.updateValue(t, col, t.value(rows[0], col), other))
		sets = append(sets, fmt.Sprintf("%s = $%d::text::%s", col.ident, len(args), col.typ))
		renamed = renamed || col.kind == kText
	}
	if err := g.set(ctx, t, rows[0], sets, args); err != nil {
		return err
	}
	c.Updated++
	if renamed && t.lookup(int64(g.opt.LookupRows)) {
		c.Renamed++
	}
	return nil
}

// set runs UPDATE t SET sets WHERE <r's key>.
func (g *Generator) set(ctx context.Context, t *table, r row, sets []string, args []*string) error {
	where, args := t.whereKey(r, args)
	n, err := g.exec(ctx, fmt.Sprintf("UPDATE %s x SET %s WHERE %s", t.ident, strings.Join(sets, ", "), where), args...)
	if err != nil {
		return err
	}
	if n != 1 {
		return nothing("the row is gone")
	}
	return nil
}

// rename gives a lookup row's text column a new word ('email' becomes
// something else: every document keyed or labelled by it changes).
func (g *Generator) rename(ctx context.Context, t *table, c *Counts) error {
	var cands []*column
	for _, col := range t.cols {
		if col.kind == kText && !col.fk && writable(col) {
			cands = append(cands, col)
		}
	}
	if len(cands) == 0 {
		return g.update(ctx, t, c)
	}
	rows, err := g.changeRows(ctx, t, 1)
	if err != nil {
		return err
	}
	col := cands[g.rng.IntN(len(cands))]
	v := word(g.rng, true)
	if col.maxLen > 0 && len(v) > col.maxLen {
		v = v[:col.maxLen]
	}
	if err := g.set(ctx, t, rows[0], []string{fmt.Sprintf("%s = $1::text::%s", col.ident, col.typ)}, []*string{ptr(v)}); err != nil {
		return err
	}
	c.Updated++
	c.Renamed++
	if col.pk {
		c.Rekeyed++
	}
	return nil
}

// move points a row's foreign key at another parent (or, now and then,
// at none when the key is nullable).
func (g *Generator) move(ctx context.Context, t *table, c *Counts) error {
	if len(t.fks) == 0 {
		return g.update(ctx, t, c)
	}
	fk := t.fks[g.rng.IntN(len(t.fks))]
	rows, err := g.changeRows(ctx, t, 1)
	if err != nil {
		return err
	}
	old := make([]*string, len(fk.cols))
	hasOld := false
	for i, col := range fk.cols {
		old[i] = t.value(rows[0], col)
		hasOld = hasOld || old[i] != nil
	}
	nullable := !slices.ContainsFunc(fk.cols, func(c *column) bool { return c.notNull })
	newVals := make([]*string, len(fk.cols))
	if !(nullable && hasOld && g.rng.IntN(8) == 0) {
		var cond string
		var args []*string
		if hasOld {
			exprs, types := colExprs(fk.refs)
			places := make([]string, len(old))
			for i := range old {
				args = append(args, old[i])
				places[i] = fmt.Sprintf("$%d::text::%s", len(args), types[i])
			}
			cond = fmt.Sprintf("ROW(%s) IS DISTINCT FROM ROW(%s)", strings.Join(exprs, ", "), strings.Join(places, ", "))
		}
		parents, err := g.sample(ctx, fk.parent, 1, and(cond, notNull(fk.refs)), args...)
		if err != nil {
			return err
		}
		if len(parents) == 0 {
			return nothing("no other parent row")
		}
		for i := range fk.cols {
			newVals[i] = fk.parent.value(parents[0], fk.refs[i])
		}
	}
	sets := make([]string, len(fk.cols))
	for i, col := range fk.cols {
		sets[i] = fmt.Sprintf("%s = $%d::text::%s", col.ident, i+1, col.typ)
	}
	if err := g.set(ctx, t, rows[0], sets, newVals); err != nil {
		return err
	}
	c.Updated++
	c.Moved++
	return nil
}

// rekey changes a row's primary key (a column that is not also a foreign
// key). Children follow where their foreign keys say ON UPDATE CASCADE;
// elsewhere a referenced row refuses and the savepoint rolls back.
func (g *Generator) rekey(ctx context.Context, t *table, c *Counts) error {
	var cands []*column
	for _, col := range t.pk {
		if !col.fk && writable(col) {
			cands = append(cands, col)
		}
	}
	if len(cands) == 0 {
		if len(t.fks) > 0 {
			return g.move(ctx, t, c)
		}
		return nothing("no key column to change")
	}
	rows, err := g.changeRows(ctx, t, 1)
	if err != nil {
		return err
	}
	col := cands[g.rng.IntN(len(cands))]
	old := t.value(rows[0], col)
	var v *string
	if col.partKey {
		v = g.updateValue(t, col, old, nil)
	} else if v, err = g.newKey(ctx, t, col, old); err != nil {
		return err
	}
	if err := g.set(ctx, t, rows[0], []string{fmt.Sprintf("%s = $1::text::%s", col.ident, col.typ)}, []*string{v}); err != nil {
		return err
	}
	c.Updated++
	c.Rekeyed++
	return nil
}

// doomed are the rows a delete takes, per table, in the order found.
type doomed struct {
	tables []*table
	rows   map[*table][]row
	seen   map[*table]map[string]bool
	total  int
}

func (d *doomed) add(t *table, r row) bool {
	k := keyString(t.key(r))
	if d.seen[t] == nil {
		d.seen[t] = map[string]bool{}
		d.tables = append(d.tables, t)
	}
	if d.seen[t][k] {
		return false
	}
	d.seen[t][k] = true
	d.rows[t] = append(d.rows[t], r)
	d.total++
	return true
}

func keyString(vals []*string) string {
	var b strings.Builder
	for _, v := range vals {
		if v == nil {
			b.WriteString("\x01")
		} else {
			b.WriteString(*v)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// delete removes a row with everything that depends on it (children,
// grandchildren, ...), children first, in the savepoint's transaction. Of
// a few sampled rows it takes the first whose dependents number at most
// MaxCascade.
func (g *Generator) delete(ctx context.Context, t *table, rep *Report) error {
	cands, err := g.someRows(ctx, t, 3)
	if err != nil {
		return err
	}
	for _, cand := range cands {
		d, err := g.dependents(ctx, t, cand)
		if err != nil {
			return err
		}
		if d == nil {
			continue // too many
		}
		for _, dt := range deleteOrder(d) {
			exprs, types := dt.keyParts()
			keys := make([][]*string, len(d.rows[dt]))
			for i, r := range d.rows[dt] {
				keys[i] = dt.key(r)
			}
			cond, args := inTuples(exprs, types, keys, nil)
			n, err := g.exec(ctx, "DELETE FROM "+dt.ident+" x WHERE "+cond, args...)
			if err != nil {
				return err
			}
			c := rep.counts(dt.name)
			c.Deleted += int(n)
			if dt != t {
				c.Cascaded += int(n)
			} else if n > 1 {
				c.Cascaded += int(n) - 1 // a self-referencing table's own children
			}
		}
		if d.total > 1 {
			rep.counts(t.name).Parents++
		}
		return nil
	}
	return nothing("every candidate has more than MaxCascade dependent rows")
}

// dependents finds the row and every row that depends on it through
// foreign keys, one query per foreign key and level; nil when they are
// more than MaxCascade, or more than a third of another table's rows (a
// delete must not starve the next rounds).
func (g *Generator) dependents(ctx context.Context, t *table, r row) (*doomed, error) {
	d := &doomed{rows: map[*table][]row{}, seen: map[*table]map[string]bool{}}
	d.add(t, r)
	type batch struct {
		t    *table
		rows []row
	}
	queue := []batch{{t, []row{r}}}
	for len(queue) > 0 {
		b := queue[0]
		queue = queue[1:]
		for _, fk := range b.t.refs {
			var tuples [][]*string
			for _, pr := range b.rows {
				tu := make([]*string, len(fk.refs))
				ok := true
				for i, rc := range fk.refs {
					tu[i] = b.t.value(pr, rc)
					ok = ok && tu[i] != nil
				}
				if ok {
					tuples = append(tuples, tu)
				}
			}
			if len(tuples) == 0 {
				continue
			}
			exprs, types := colExprs(fk.cols)
			cond, args := inTuples(exprs, types, tuples, nil)
			kids, err := g.selectRows(ctx, fk.child, cond, args, g.opt.MaxCascade+1, false)
			if err != nil {
				return nil, err
			}
			var added []row
			for _, k := range kids {
				if d.add(fk.child, k) {
					added = append(added, k)
				}
			}
			if d.total > g.opt.MaxCascade || len(d.rows[fk.child]) > max(2, g.rows[fk.child]/3) && fk.child != t {
				return nil, nil
			}
			if len(added) > 0 {
				queue = append(queue, batch{fk.child, added})
			}
		}
	}
	return d, nil
}

// deleteOrder lists the tables of d children first: a table comes after
// every other table of d whose foreign keys point to it (cycles are broken
// in the order found).
func deleteOrder(d *doomed) []*table {
	left := slices.Clone(d.tables)
	var out []*table
	for len(left) > 0 {
		i := slices.IndexFunc(left, func(p *table) bool {
			return !slices.ContainsFunc(p.refs, func(fk *fkey) bool {
				return fk.child != p && slices.Contains(left, fk.child)
			})
		})
		if i < 0 {
			i = len(left) - 1
		}
		out = append(out, left[i])
		left = slices.Delete(left, i, i+1)
	}
	return out
}

// truncate empties t, and with CASCADE every table that points to it.
func (g *Generator) truncate(ctx context.Context, t *table, rep *Report) error {
	hit := []*table{t}
	for i := 0; i < len(hit); i++ {
		for _, fk := range hit[i].refs {
			if !slices.Contains(hit, fk.child) {
				hit = append(hit, fk.child)
			}
		}
	}
	sql := "TRUNCATE " + t.ident
	if len(hit) > 1 {
		sql += " CASCADE"
	}
	if _, err := g.exec(ctx, sql); err != nil {
		return err
	}
	for _, h := range hit {
		rep.counts(h.name).Truncate++
	}
	return nil
}
