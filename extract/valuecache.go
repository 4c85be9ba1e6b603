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
// repeatsWorthCaching), so one boxed value may sit in any number of rows. A column
// whose values rarely repeat turns its cache off for a while (see lookup).
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
	s := &vc.slots[cacheIndex(src)]
	vc.lookups++
	if s.n == len(src) && bytes.Equal(s.key[:s.n], src) {
		vc.hits++
		vc.window()
		return s.v, true
	}
	vc.window()
	v, ok := fast(a, src)
	if ok {
		s.n = copy(s.key[:], src)
		s.v = v
	}
	return v, ok
}

// window ends a window of lookups, turning the cache off when it hit too
// rarely to pay for its hashing and copying.
func (vc *valueCache) window() {
	if vc.lookups < cacheWindow {
		return
	}
	if vc.hits < cacheMinHits {
		vc.skip = cacheOff
	}
	vc.lookups, vc.hits = 0, 0
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
