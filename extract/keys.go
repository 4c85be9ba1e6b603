package extract

// Reading by key set: the documents of given keys only, for sync, which
// rebuilds exactly the documents a change touched. The keys are grouped
// in batches; per batch one statement has PostgreSQL parse the keys (text
// in their columns' input syntax, cast to the columns' types), one reads
// the root rows of the batch's keys, in stream order, and the relations
// are read set-wise for those rows by the same code as a full read's: the
// documents are byte for byte the ones a full read builds. Never a query
// per key.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Asked is what a key-set read found for one key it was given.
type Asked struct {
	// Key is the key in the form KeyOf gives: the text of the values
	// PostgreSQL parsed from the key given ("007" given reads as "7"), or,
	// when Found, of the values of the row found, which may be spelled
	// otherwise where PostgreSQL's = is not byte equality ("ABC" given
	// finds the citext key "AbC", "1.0" the numeric key 1.00).
	Key Key
	// Values are the key's values as a row holds them (document values),
	// in the order of KeyColumns: those of the row found, when Found.
	Values []any
	// Ident are the key's values as PostgreSQL compares them, in the
	// order of KeyColumns: the values of the plan's IDKeys (or a bucket
	// collection's ByKeys), which are Values or key columns PostgreSQL
	// computed.
	Ident []any
	// Found reports whether a root row with the key exists in the
	// snapshot and passes the root's filter. When false, no document of
	// the key exists (no page, for a bucket collection's parent).
	Found bool
}

// KeyColumns are the root columns a key-set read's keys name, as indexes
// in plan.Root.Columns: the _id columns, or a bucket collection's parent
// columns (Bucket.By), whose pages are read whole.
func KeyColumns(plan *mappings.CollectionPlan) []int {
	if plan.Bucket != nil {
		return plan.Bucket.By
	}
	return plan.IDCols
}

// keyIdentity are the root columns that identify a key-set read's keys as
// PostgreSQL compares them, in the order of KeyColumns (see
// mappings.CollectionPlan.IDKeys).
func keyIdentity(plan *mappings.CollectionPlan) []int {
	if plan.Bucket != nil {
		return plan.Bucket.ByKeys
	}
	return plan.IDKeys
}

// keySet is the state of a key-set read.
type keySet struct {
	cols, ident []int
	// todo are the keys not yet grouped; seen the keys grouped so far (by
	// their identity: PostgreSQL's = between keys), so a key given twice,
	// in any spelling PostgreSQL calls equal, is read once.
	todo []Key
	seen map[string]bool
	// group are the keys being read, and index their positions by
	// identity; cond selects their rows, with parameters args (their
	// text).
	group []Asked
	index map[string]int
	cond  string
	args  []any
}

// NewKeyReader reads from snap exactly the root rows of plan whose key -
// the values of KeyColumns, in text form (PostgreSQL input syntax, nil
// for NULL) - is one of keys: for a bucket collection, every row of the
// parents given, in the full stream's order, so a Pager numbers their
// pages as a full read does. Keys are read batchSize at a time, with every
// relation; a key given more than once is read once. Each group of keys
// ends with a batch whose Asked lists them (that batch may have no rows).
// Keys that PostgreSQL cannot parse as their columns' types fail the read.
// The reader remembers the keys it has read, so memory grows with the key
// set (which the caller holds anyway), not with the rows.
func NewKeyReader(snap *Snapshot, plan *mappings.CollectionPlan, batchSize int, keys []Key) *Reader {
	r := NewReader(snap, plan, batchSize, nil)
	r.tried = true // merge streams read whole tables
	r.keys = &keySet{cols: KeyColumns(plan), ident: keyIdentity(plan), todo: keys, seen: map[string]bool{}}
	return r
}

// nextKeys is Next for a key-set read.
func (r *Reader) nextKeys(ctx context.Context) (*Batch, error) {
	ks, root := r.keys, r.plan.Root
	queries := 0
	for ks.group == nil {
		if len(ks.todo) == 0 {
			r.done = true
			r.Queries += queries
			return nil, io.EOF
		}
		n := min(r.batchSize, len(ks.todo))
		if err := r.parseKeys(ctx, ks.todo[:n]); err != nil {
			return nil, fmt.Errorf("extract %q: parse keys: %w", root.Table.Name, err)
		}
		ks.todo = ks.todo[n:]
		queries++
		r.after = nil
	}
	// The _id is unique: a group's rows fit one statement. A bucket
	// parent's rows are paged through, in stream order.
	limit := 0
	if r.plan.Bucket != nil {
		limit = r.batchSize
	}
	sql, args := rootQuery(r.plan, r.after, limit, []string{ks.cond}, ks.args)
	roots, err := r.read(ctx, root, sql, args)
	if err != nil {
		return nil, fmt.Errorf("extract %q by key after key %v: %w", root.Table.Name, r.after, err)
	}
	queries++
	b := &Batch{Roots: roots, related: map[*mappings.Node]*relation{}}
	if len(roots) > 0 {
		n, err := r.children(ctx, b, root, roots)
		queries += n
		if err != nil {
			return nil, err
		}
	}
	for _, row := range roots {
		id, ok := joinKey(row, ks.ident)
		i, asked := ks.index[id]
		if !ok || !asked || ks.group[i].Found {
			continue
		}
		k, err := keyOf(root, row, ks.cols)
		if err != nil {
			return nil, fmt.Errorf("extract %q: %w", root.Table.Name, err)
		}
		a := &ks.group[i]
		a.Found, a.Key, a.Values, a.Ident = true, k, make([]any, len(ks.cols)), make([]any, len(ks.cols))
		for j, c := range ks.cols {
			a.Values[j], a.Ident[j] = row[c], row[ks.ident[j]]
		}
	}
	if limit > 0 && len(roots) == limit {
		if r.after, err = KeyOf(r.plan, roots[len(roots)-1]); err != nil {
			return nil, fmt.Errorf("extract %q: %w", root.Table.Name, err)
		}
	} else {
		b.Asked, ks.group = ks.group, nil
	}
	b.Queries = queries
	r.Queries += queries
	return b, nil
}

// parseKeys has PostgreSQL parse keys as their columns' types and makes
// the next group of those not read yet.
func (r *Reader) parseKeys(ctx context.Context, keys []Key) error {
	ks, root := r.keys, r.plan.Root
	cols := make([]mappings.Column, len(ks.cols))
	modes := make([]mappings.NumericMode, len(ks.cols))
	refs := make([]string, len(ks.cols))
	types := make([]string, len(ks.cols))
	text := make([][]*string, len(ks.cols))
	for i, c := range ks.cols {
		cols[i], modes[i] = root.Columns[c], root.Numeric[c]
		refs[i], types[i] = colRef(cols[i].Name), cols[i].Type
		text[i] = make([]*string, len(keys))
	}
	ks.cond = inKeySet(refs, types)
	unnest, names, casts := keyArrays(types)
	// PostgreSQL computes the identity of the keys whose values may be
	// spelled otherwise yet be equal, as it does for the root rows.
	selects := append([]string(nil), casts...)
	ident := make([]int, len(ks.cols))
	for i, c := range ks.ident {
		ident[i] = i
		if c != ks.cols[i] {
			ident[i] = len(cols)
			cols = append(cols, root.Columns[c])
			modes = append(modes, root.Numeric[c])
			selects = append(selects, mappings.CanonSQL(root.Columns[c].Canon, casts[i]))
		}
	}
	args := make([]any, len(ks.cols))
	for j, k := range keys {
		if len(k) != len(ks.cols) {
			return fmt.Errorf("key %v has %d values, want %d", k, len(k), len(ks.cols))
		}
		for i := range ks.cols {
			text[i][j] = k[i]
		}
	}
	for i := range text {
		args[i] = text[i]
	}
	// The parsed values are decoded like the root's own: the same types,
	// the same NUMERIC mode, so an _id made of them is the _id a document
	// of the row has.
	keyNode := &mappings.Node{Table: root.Table, Columns: cols, Numeric: modes}
	parsed, err := r.read(ctx, keyNode, fmt.Sprintf("SELECT %s FROM unnest(%s) WITH ORDINALITY AS p(%s, ord) ORDER BY ord",
		strings.Join(selects, ", "), strings.Join(unnest, ", "), strings.Join(names, ", ")), args)
	if err != nil {
		return err
	}
	if len(parsed) != len(keys) {
		return fmt.Errorf("%d keys parsed, %d given", len(parsed), len(keys))
	}
	ks.group, ks.index = nil, map[string]int{}
	params := make([][]string, len(ks.cols))
	seq := make([]int, len(ks.cols))
	for i := range seq {
		seq[i] = i
	}
	for j, values := range parsed {
		k, err := keyOf(keyNode, values, seq)
		if err != nil {
			return err
		}
		id, ok := joinKey(values, ident)
		if !ok {
			id = "\x00null:" + k.String() // a NULL: no key, but listed once
		}
		if ks.seen[id] {
			continue
		}
		ks.seen[id] = true
		ks.index[id] = len(ks.group)
		a := Asked{Key: k, Values: values[:len(ks.cols)], Ident: make([]any, len(ks.cols))}
		for i, c := range ident {
			a.Ident[i] = values[c]
		}
		ks.group = append(ks.group, a)
		if slices.Contains(k, nil) {
			continue // NULL is no key: nothing to read
		}
		// The text given, not k: PostgreSQL parses it exactly as it
		// parsed it above (k may have lost digits, as a NUMERIC read as a
		// double does).
		for i := range params {
			params[i] = append(params[i], *keys[j][i])
		}
	}
	ks.args = make([]any, len(params))
	for i := range params {
		ks.args[i] = params[i]
	}
	return nil
}
