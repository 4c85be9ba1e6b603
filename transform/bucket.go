package transform

import (
	"fmt"
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
// returned as errors; the page goes on without them.
func (p *Pager) Add(rows [][]any, rel Related) ([]Document, []*RowError) {
	var docs []Document
	var errs []*RowError
	for _, row := range rows {
		// Rows come grouped by parent: the same parent values need no
		// new key text.
		if !p.sameParent(row) {
			key, err := p.parentText(row)
			if err != nil {
				errs = append(errs, &RowError{Collection: p.cp.Name, Source: SourceKey(p.cp, row), Err: err})
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
			errs = append(errs, &RowError{Collection: p.cp.Name, Source: SourceKey(p.cp, row), Err: err})
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

// Flush ends the stream and returns the last, partial page, if any.
func (p *Pager) Flush() []Document {
	if d, ok := p.endParent(); ok {
		return []Document{d}
	}
	return nil
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
	id := fmt.Sprintf("%s-%d", p.parentKey, p.page)
	body := make(Doc, 0, len(p.bp.By)+3)
	body = append(body, Field{Key: "_id", Value: id})
	for i := range p.bp.By {
		body = append(body, Field{Key: p.bp.ByNames[i], Value: p.parent[i]})
	}
	body = append(body, Field{Key: p.bp.Page, Value: int32(p.page)}, Field{Key: p.bp.Items, Value: p.items})
	d := Document{Collection: p.cp.Name, ID: id, Body: body, Source: p.source(), Last: p.last,
		Page: &PagerState{ParentKey: p.parentKey, Page: p.page}}
	p.page++
	p.items = make(Array, 0, p.bp.Size)
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

// parentText is the parent key as it appears in page ids: the values'
// text joined by "-".
func (p *Pager) parentText(row []any) (string, error) {
	parts := make([]string, len(p.bp.By))
	for i, c := range p.bp.By {
		s, err := keyString(row[c])
		if err != nil {
			return "", fmt.Errorf("bucket parent key %s: %w", p.cp.Root.Columns[c].Name, err)
		}
		parts[i] = s
	}
	return strings.Join(parts, "-"), nil
}
