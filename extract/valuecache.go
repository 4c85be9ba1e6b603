package extract

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/denorm/denorm/mappings"
)

// A valueCache remembers the last values a column decoded, by their wire
// bytes, so that a value repeated in the column is handed out again instead
// of being decoded and boxed anew. Real tables repeat a lot within a
// column: status codes, currencies, warehouses, and the dates and notes a
// parent's children share, which arrive one after the other in a merge
// stream. A repeat then costs a hash and a compare instead of a decode, a
// copy and a boxed value for the collector to trace.
//
// Only immutable values are cached (strings, decimals, times: see
// repeatsWorthCaching), so one boxed value may sit in any number of rows.
// A column whose values rarely repeat turns its cache off for a while (see
// window).
//
// A cached value keeps the arena block it was decoded into alive. The
// slots are emptied at the end of every window, so that they only keep
// blocks of the column's last cacheWindow values (a value that stays hot
// is decoded again once a window), and a decoder gives caches to at most
// maxCachedColumns columns: what caches keep alive beyond the rows in
// flight is bounded whatever the table.
type valueCache struct {
	slots [cacheSlots]cacheSlot
	// lookups and hits count the current window; skip is the number of
	// values still to decode without the cache.
	lookups, hits, skip int
}

type cacheSlot struct {
	n   int // key length; 0: empty (an empty value is not cached)
	key [cacheKeyMax]byte
	v   any
}

const (
	cacheBits   = 4
	cacheSlots  = 1 << cacheBits
	cacheKeyMax = 64 // longer values are not cached
	// A window of cacheWindow lookups with fewer than cacheMinHits hits
	// turns the cache off for the next cacheOff values.
	cacheWindow  = 1024
	cacheMinHits = cacheWindow / 8
	cacheOff     = 64 * cacheWindow
	// maxCachedColumns is the most columns of a row that get a cache.
	maxCachedColumns = 64
)

// decode returns the value of src, from the cache or from fast (whose
// result, when ok, it remembers).
func (vc *valueCache) decode(fast fastFunc, a *arena, src []byte) (any, bool) {
	if vc.skip > 0 || len(src) == 0 || len(src) > cacheKeyMax {
		if vc.skip > 0 {
			vc.skip--
		}
		return fast(a, src)
	}
	h := cacheIndex(src)
	s, s2 := &vc.slots[h], &vc.slots[h^1]
	vc.lookups++
	for _, e := range [2]*cacheSlot{s, s2} {
		if e.n == len(src) && bytes.Equal(e.key[:e.n], src) {
			vc.hits++
			v := e.v
			vc.window() // which may empty e
			return v, true
		}
	}
	v, ok := fast(a, src)
	if ok {
		// A value's second slot, so that two values meeting in one
		// slot (EUR and USD, say) do not push each other out.
		if s.n != 0 && s2.n == 0 {
			s = s2
		}
		s.n = copy(s.key[:], src)
		s.v = v
	}
	vc.window()
	return v, ok
}

// window ends a window of lookups: it empties the slots, and turns the
// cache off when it hit too rarely to pay for its hashing and copying.
func (vc *valueCache) window() {
	if vc.lookups < cacheWindow {
		return
	}
	if vc.hits < cacheMinHits {
		vc.skip = cacheOff
	}
	vc.lookups, vc.hits = 0, 0
	vc.slots = [cacheSlots]cacheSlot{}
}

// cacheIndex hashes 1 to cacheKeyMax bytes into a slot: their length, the
// first eight and the last eight.
func cacheIndex(b []byte) int {
	var h uint64
	if len(b) >= 8 {
		h = binary.LittleEndian.Uint64(b) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(b[len(b)-8:]), 29)
	} else {
		for _, c := range b {
			h = h<<8 | uint64(c)
		}
	}
	h = (h ^ uint64(len(b))) * 0x9E3779B97F4A7C15
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	return int(h >> (64 - cacheBits))
}

// repeatsWorthCaching reports whether the direct decoder of col arriving as oid
// gives immutable values worth remembering: text of every kind (not json
// or jsonb, which are parsed into documents), decimals, dates, timestamps
// and uuids. Integers, floats and booleans are cheaper to decode than to
// look up; byte strings and arrays are slices.
func repeatsWorthCaching(col *mappings.Column, oid uint32) bool {
	switch {
	case oid == pgtype.TextOID:
		return col.TypeName != "json" && col.TypeName != "jsonb"
	case textLike(col, oid):
		return true
	}
	switch oid {
	case pgtype.NumericOID, pgtype.DateOID, pgtype.TimestampOID, pgtype.TimestamptzOID, pgtype.UUIDOID:
		return true
	}
	return false
}
