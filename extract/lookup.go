package extract

import "github.com/denorm/denorm/mappings"

// lookupCacheKeys caps the keys one lookup's cache holds; past it the
// cache starts over, so memory stays bounded whatever the table sizes.
const lookupCacheKeys = 50_000

// lookupCache keeps the rows a lookup relation gave per parent key, for
// the whole read: lookups point at a few rows that many parents share
// (the contact-detail type of every contact detail), all read in one
// snapshot, so a row fetched once is valid for every later batch. Without
// it each batch would ask again for the same few rows, a round trip the
// reader waits for. Keys that matched no row are kept too (nil rows).
type lookupCache struct {
	rows map[string][][]any
}

// cacheable reports whether relation c's rows can be cached per key: a
// lookup without relations of its own (those are read per batch).
func cacheable(c *mappings.Node) bool {
	return c.Kind == mappings.NodeLookup && len(c.Children) == 0
}

// cacheFor returns the cache of lookup c, nil when c is not cacheable.
func (r *Reader) cacheFor(c *mappings.Node) *lookupCache {
	if !cacheable(c) {
		return nil
	}
	if r.lookups == nil {
		r.lookups = map[*mappings.Node]*lookupCache{}
	}
	lc := r.lookups[c]
	if lc == nil {
		lc = &lookupCache{rows: map[string][][]any{}}
		r.lookups[c] = lc
	}
	return lc
}

// store files the rows fetched for keys (each row under its join key) and
// marks the keys that matched nothing.
func (lc *lookupCache) store(c *mappings.Node, keys []string, rows [][]any) {
	if len(lc.rows)+len(keys) > lookupCacheKeys {
		lc.rows = map[string][][]any{}
	}
	for _, k := range keys {
		lc.rows[k] = nil
	}
	for _, row := range rows {
		if k, ok := joinKey(row, c.JoinCols); ok {
			lc.rows[k] = append(lc.rows[k], row)
		}
	}
}
