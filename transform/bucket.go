package transform

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Pager builds the page documents of a bucket collection from its rows in
// stream order (parent key, then the bucket's order). It holds at most one
// page of items, plus the SkipLast rows it holds back per parent, so memory
// is bounded whatever the number of children of one parent.
//
// A Pager is used by one goroutine; feed it every batch in order with Add,
// then call Flush once at the end of the stream.
type Pager struct {
	cp *mappings.CollectionPlan
	bp *mappings.BucketPlan
	// The current parent: its key values and their text.
	parent    []any
	parentKey string
	page      int
	items     Array
	last      []any // the source row of the last item on the page
	// held are the rows held back for SkipLast, oldest first.
	held []heldItem
	// slab holds the items' fields (never reset: pages span batches).
	slab Slab
	// done is where the pages emitted so far end (see Position).
	done     []any
	donePage PagerState
}

type heldItem struct {
	item Doc
	row  []any
}

// PagerState is where a Pager resumes: the parent of the last page
// written, that page's number, and whether it was full (so that the next
// row of the same parent starts the next page).
type PagerState struct {
	ParentKey string
	Page      int
}

// NewPager starts a pager; resume, when not nil, continues numbering after
// a page already written.
func NewPager(cp *mappings.CollectionPlan, resume *PagerState) *Pager {
	p := &Pager{cp: cp, bp: cp.Bucket}
	if resume != nil {
		p.parentKey = resume.ParentKey
		p.page = resume.Page + 1
		p.parent = []any{} // a parent is current, only its key is known
	}
	return p
}

// Add takes the next rows of the stream (related rows from rel) and
// returns the pages they completed. Rows that cannot become an item are
// returned as rejects; the page goes on without them.
func (p *Pager) Add(rows [][]any, rel Related) ([]Document, []Reject) {
	var docs []Document
	var errs []Reject
	for _, row := range rows {
		// Rows come grouped by parent: the same parent values need no
		// new key text.
		if !p.sameParent(row) {
			key, err := p.parentText(row)
			if err != nil {
				errs = append(errs, Reject{Collection: p.cp.Name, Source: SourceKey(p.cp, row), Err: err})
				continue
			}
			if p.parent == nil || key != p.parentKey {
				if d, ok := p.endParent(); ok {
					docs = append(docs, d)
				}
				p.parent, p.parentKey, p.page = p.parentValues(row), key, 0
			} else if len(p.parent) == 0 {
				p.parent = p.parentValues(row) // resumed: now the values are known
			}
		}
		item, err := appendFieldsIn(p.slab.doc(len(p.cp.Root.Fields)), p.cp.Root, row, rel, &p.slab)
		if err != nil {
			errs = append(errs, Reject{Collection: p.cp.Name, Source: SourceKey(p.cp, row), Err: err})
			continue
		}
		h := heldItem{item: item, row: row}
		if p.bp.SkipLast > 0 {
			p.held = append(p.held, h)
			if len(p.held) <= p.bp.SkipLast {
				continue
			}
			h = p.held[0]
			p.held = p.held[1:]
		}
		p.items = append(p.items, h.item)
		p.last = h.row
		if len(p.items) == p.bp.Size {
			docs = append(docs, p.emit())
		}
	}
	return docs, errs
}

// Flush ends the current parent's pages and returns its last, partial
// page, if any: call it at the end of the stream. Rows added after it
// start a new parent, at page 0.
func (p *Pager) Flush() []Document {
	d, ok := p.endParent()
	p.parent, p.parentKey = nil, ""
	if ok {
		return []Document{d}
	}
	return nil
}

// Position is where the pages emitted so far end: the source row of the
// last item of the last page, and that page's state; ok is false before
// the first page. A stream resumed after that row, with a Pager resumed
// from that state, builds exactly the pages that follow.
func (p *Pager) Position() (last []any, state PagerState, ok bool) {
	return p.done, p.donePage, p.done != nil
}

// endParent drops the rows held back for the parent that ends and emits
// its partial page.
func (p *Pager) endParent() (Document, bool) {
	p.held = p.held[:0]
	if len(p.items) == 0 {
		return Document{}, false
	}
	return p.emit(), true
}

func (p *Pager) emit() Document {
	id := PageID(p.parentKey, p.page)
	body := make(Doc, 0, len(p.bp.By)+3)
	body = append(body, Field{Key: "_id", Value: id})
	for i, c := range p.bp.By {
		body = append(body, Field{Key: p.bp.ByNames[i], Value: DocValue(&p.cp.Root.Columns[c], p.parent[i])})
	}
	body = append(body, Field{Key: p.bp.Page, Value: intValue(int64(p.page))}, Field{Key: p.bp.Items, Value: p.items})
	d := Document{Collection: p.cp.Name, ID: id, Body: body, Source: p.source(),
		Page: &PagerState{ParentKey: p.parentKey, Page: p.page}}
	p.done, p.donePage = p.last, *d.Page
	p.page++
	// Pages of most parents are short: grow to Size only when needed.
	p.items = make(Array, 0, min(p.bp.Size, 1024))
	return d
}

func (p *Pager) source() string {
	cols := make([]string, len(p.bp.By))
	for i, c := range p.bp.By {
		cols[i] = p.cp.Root.Columns[c].Name
	}
	return fmt.Sprintf("%s (%s)=(%s) page %d", p.cp.Root.Table.Name, strings.Join(cols, ", "), p.parentKey, p.page)
}

// sameParent reports whether row's parent values are those of the current
// parent (false when unsure: then the key text decides).
func (p *Pager) sameParent(row []any) bool {
	if len(p.parent) != len(p.bp.By) {
		return false
	}
	for i, c := range p.bp.By {
		switch x := row[c].(type) {
		case int32, int64, string, bool, Decimal:
			if x != p.parent[i] {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (p *Pager) parentValues(row []any) []any {
	v := make([]any, len(p.bp.By))
	for i, c := range p.bp.By {
		v[i] = row[c]
	}
	return v
}

// parentText is the parent key as it appears in page ids (see ParentKey).
func (p *Pager) parentText(row []any) (string, error) { return ParentKey(p.cp, row) }

// ParentKey is the text a bucket parent's page ids start with, for a root
// row of bucket collection cp (see PageID). It is made of the parent's
// key values as PostgreSQL compares them (Bucket.ByKeys: numeric without
// trailing zeros, char(n) without padding, citext folded), so rows of one
// parent have one key, and different parents different keys: a single
// value's text as it is; several values each with "%" and "-" escaped
// (%25, %2D), joined by "-".
func ParentKey(cp *mappings.CollectionPlan, row []any) (string, error) {
	for _, c := range cp.Bucket.By {
		if iv, ok := row[c].(Invalid); ok {
			// The page would hold it as a parent field.
			return "", fmt.Errorf("bucket parent key %s: %w", cp.Root.Columns[c].Name, iv.Err)
		}
	}
	s, err := keysText(cp.Root, row, cp.Bucket.ByKeys)
	if err != nil {
		return "", fmt.Errorf("bucket parent key: %w", err)
	}
	return s, nil
}

// keysText is the text of the values of row (of root node n) at keys: a
// single value's text as it is, several values each with "%" and "-"
// escaped (%25, %2D) and joined by "-", so no two tuples give one text.
func keysText(n *mappings.Node, row []any, keys []int) (string, error) {
	if len(keys) == 1 {
		s, err := parentText(row[keys[0]])
		if err != nil {
			return "", fmt.Errorf("%s: %w", n.Columns[keys[0]].Name, err)
		}
		return s, nil
	}
	parts := make([]string, len(keys))
	for i, c := range keys {
		s, err := parentText(row[c])
		if err != nil {
			return "", fmt.Errorf("%s: %w", n.Columns[c].Name, err)
		}
		parts[i] = pageIDEscaper.Replace(s)
	}
	return strings.Join(parts, "-"), nil
}

// prefixedID is the _id of a root row of a document entry with an
// idPrefix: the prefix, then the text of its id values as PostgreSQL
// compares them (IDKeys), as keysText gives it: "book-b1", "line-42-3".
// A value that has no text stands in as Invalid (the row is rejected).
func prefixedID(cp *mappings.CollectionPlan, row []any) any {
	// The text comes from the id's keys (IDKeys): a value no document
	// holds as itself (±infinity in a timestamp) has a text there, and
	// only a key that could not be read rejects the row.
	for _, c := range cp.IDKeys {
		if iv, ok := row[c].(Invalid); ok {
			return iv
		}
	}
	s, err := keysText(cp.Root, row, cp.IDKeys)
	if err != nil {
		return Invalid{Err: fmt.Errorf("_id: %w", err)}
	}
	return cp.IDPrefix + s
}

var pageIDEscaper = strings.NewReplacer("%", "%25", "-", "%2D")

// parentText is one key value's text in a page id or a prefixed _id.
func parentText(v any) (string, error) {
	switch x := v.(type) {
	case UUID:
		return string(appendUUID(nil, x)), nil
	case Binary:
		return fmt.Sprintf("%x", []byte(x)), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	case string:
		return x, nil // also "": a parent key may be empty
	}
	return keyString(v)
}

// PageID is the _id of page number page of the parent whose ParentKey is
// parent: "<parent>-<page>" ("42-0" for the first page of parent 42). The
// page number follows the last "-", and the parent key of a composite key
// has its own "-" escaped, so no two (parent, page) pairs share an id.
func PageID(parent string, page int) string { return fmt.Sprintf("%s-%d", parent, page) }
