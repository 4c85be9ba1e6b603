package extract

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/denorm/denorm/internal/box"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// TestValueCache decodes rows whose values repeat within their columns, as
// in real tables, and some that never repeat, through the decoders with
// their value caches, and holds every value to the codec path (or, where
// that refuses the bytes, to transform.Invalid). It checks that repeats are
// handed out as the same boxed value, that a column of values that do not
// repeat turns its cache off, that the cache comes back when they repeat
// again, and that shared values survive garbage collections.
func TestValueCache(t *testing.T) {
	m := pgtype.NewMap()
	type colGen struct {
		col  mappings.Column
		oid  uint32
		mode mappings.NumericMode
		gen  func(r *rand.Rand) []byte
	}
	numeric := func(r *rand.Rand) []byte {
		n := pgtype.Numeric{Int: big.NewInt(r.Int64N(2_000_000) - 1_000_000), Exp: int32(-r.IntN(4)), Valid: true}
		if r.IntN(50) == 0 {
			n = pgtype.Numeric{NaN: true, Valid: true}
		}
		b, err := m.Encode(pgtype.NumericOID, pgx.BinaryFormatCode, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	date := func(r *rand.Rand) []byte {
		days := int32(r.IntN(20000) - 10000)
		switch r.IntN(40) {
		case 0:
			days = infinityDays // refused: the codec path reports it
		case 1:
			days = -2_500_000 // before pgx's range
		}
		return binary.BigEndian.AppendUint32(nil, uint32(days))
	}
	stamp := func(r *rand.Rand) []byte {
		us := r.Int64N(4e15) - 2e15
		if r.IntN(40) == 0 {
			us = infinityMicros
		}
		return binary.BigEndian.AppendUint64(nil, uint64(us))
	}
	text := func(max int) func(r *rand.Rand) []byte {
		return func(r *rand.Rand) []byte {
			alphabet := []string{"a", "Z", " ", "é", "ß", "—", "猫", "\x00", "\xff", "$", "."}
			var sb strings.Builder
			for range r.IntN(max + 1) {
				sb.WriteString(alphabet[r.IntN(len(alphabet))])
			}
			return []byte(sb.String())
		}
	}
	padded := func(r *rand.Rand) []byte {
		return []byte(fmt.Sprintf("%-8s", string(text(6)(r))))
	}
	uuid := func(r *rand.Rand) []byte {
		b := make([]byte, 16)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if r.IntN(40) == 0 {
			b = b[:15] // not a uuid: the codec path reports it
		}
		return b
	}
	gens := []colGen{
		{mappings.Column{Name: "n", Type: "numeric(12,2)", TypeName: "numeric", Category: "N"}, pgtype.NumericOID, mappings.NumericDecimal, numeric},
		{mappings.Column{Name: "nd", Type: "numeric", TypeName: "numeric", Category: "N"}, pgtype.NumericOID, mappings.NumericDouble, numeric},
		{mappings.Column{Name: "ns", Type: "numeric", TypeName: "numeric", Category: "N"}, pgtype.NumericOID, mappings.NumericString, numeric},
		{mappings.Column{Name: "d", Type: "date", TypeName: "date", Category: "D"}, pgtype.DateOID, "", date},
		{mappings.Column{Name: "ts", Type: "timestamp without time zone", TypeName: "timestamp", Category: "D"}, pgtype.TimestampOID, "", stamp},
		{mappings.Column{Name: "tz", Type: "timestamp with time zone", TypeName: "timestamptz", Category: "D"}, pgtype.TimestamptzOID, "", stamp},
		{mappings.Column{Name: "t", Type: "text", TypeName: "text", Category: "S"}, pgtype.TextOID, "", text(30)},
		{mappings.Column{Name: "v", Type: "character varying(40)", TypeName: "varchar", Category: "S"}, pgtype.VarcharOID, "", text(30)},
		{mappings.Column{Name: "c", Type: "character(8)", TypeName: "bpchar", Category: "S"}, pgtype.BPCharOID, "", padded},
		{mappings.Column{Name: "cp", Type: "character(8)", TypeName: "bpchar", Category: "S", KeepPadding: true}, pgtype.BPCharOID, "", padded},
		{mappings.Column{Name: "u", Type: "uuid", TypeName: "uuid", Category: "U"}, pgtype.UUIDOID, "", uuid},
	}
	d := &rowDecoder{node: &mappings.Node{Table: &mappings.Table{Name: "repeats"}}, m: m, width: len(gens)}
	pools := make([][][]byte, len(gens))
	r := rand.New(rand.NewPCG(27, 11))
	for i, g := range gens {
		c := decodeCol{col: g.col, mode: g.mode, oid: g.oid, fmt: pgx.BinaryFormatCode}
		c.fast = fastDecoder(&c.col, c.mode, c.oid, c.fmt)
		if c.fast == nil || !repeatsWorthCaching(&c.col, c.oid) {
			t.Fatalf("%s: no direct decoder with a cache", g.col.Type)
		}
		c.cache = new(valueCache)
		d.cols = append(d.cols, c)
		for range 12 {
			pools[i] = append(pools[i], g.gen(r))
		}
	}
	type kept struct {
		row  []any
		want []any
	}
	var keep []kept
	// Rows by phase: values mostly from the pools; values that never
	// repeat (the caches turn off); from the pools again, past the time
	// a cache stays off.
	phases := []struct {
		rows   int
		pooled float64
	}{{4000, 0.9}, {3 * cacheWindow, 0}, {cacheOff + 20000, 0.9}}
	used := make([]map[string]bool, len(gens))
	for i := range used {
		used[i] = map[string]bool{}
		for _, v := range pools[i] {
			used[i][string(v)] = true
		}
	}
	for p, ph := range phases {
		shared := make([]int, len(gens))
		seen := make([]map[string]unsafe.Pointer, len(gens))
		for i := range seen {
			seen[i] = map[string]unsafe.Pointer{}
		}
		for n := range ph.rows {
			raw := make([][]byte, len(gens))
			for i, g := range gens {
				switch {
				case r.IntN(20) == 0:
					// NULL
				case r.Float64() < ph.pooled:
					raw[i] = pools[i][r.IntN(len(pools[i]))]
				default:
					v := g.gen(r)
					for ph.pooled == 0 && used[i][string(v)] {
						v = g.gen(r) // one that never came before
					}
					used[i][string(v)] = true
					raw[i] = v
				}
			}
			row, err := d.decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]any, len(gens))
			for i := range gens {
				if raw[i] == nil {
					if row[i] != nil {
						t.Fatalf("%s: NULL decoded as %s", gens[i].col.Name, short(row[i]))
					}
					continue
				}
				c := &d.cols[i]
				w, werr := d.slow(c, raw[i])
				if werr != nil {
					if _, invalid := row[i].(transform.Invalid); !invalid {
						t.Fatalf("%s: %x: decode gives %s, the codec path refuses it: %v", c.col.Name, raw[i], short(row[i]), werr)
					}
					continue
				}
				if !sameValue(row[i], w) {
					t.Fatalf("phase %d row %d %s: %x: decode gives %s, the codec path %s", p, n, c.col.Name, raw[i], short(row[i]), short(w))
				}
				want[i] = w
				ptr := box.DataOf(row[i])
				if prev, ok := seen[i][string(raw[i])]; ok && prev == ptr {
					shared[i]++
				}
				seen[i][string(raw[i])] = ptr
			}
			if n%997 == 0 {
				keep = append(keep, kept{row, want})
			}
			if n%20000 == 0 {
				runtime.GC()
			}
		}
		for i, g := range gens {
			vc := d.cols[i].cache
			switch p {
			case 0, 2:
				// Phase 2 begins with the cache off for cacheOff values.
				if shared[i] < (ph.rows-cacheOff)/4 {
					t.Errorf("phase %d, %s: only %d of %d values were repeats handed out again", p, g.col.Name, shared[i], ph.rows)
				}
			case 1:
				if shared[i] != 0 {
					t.Errorf("%s: values that never repeat shared a boxed value %d times", g.col.Name, shared[i])
				}
				if vc.skip == 0 {
					t.Errorf("%s: the cache stayed on over %d values that never repeat", g.col.Name, ph.rows)
				}
			}
		}
	}
	// What a cache keeps is what the decoder gives for its key.
	for i := range d.cols {
		for _, sl := range d.cols[i].cache.slots {
			if sl.n == 0 {
				continue
			}
			v, ok := d.cols[i].fast(&arena{}, sl.key[:sl.n])
			if !ok || !sameValue(v, sl.v) {
				t.Fatalf("%s: the cache holds %s for %x, the decoder gives %s", gens[i].col.Name, short(sl.v), sl.key[:sl.n], short(v))
			}
		}
	}
	runtime.GC()
	for _, k := range keep {
		for i := range k.row {
			if k.want[i] != nil && !sameValue(k.row[i], k.want[i]) {
				t.Fatalf("%s: after collections %s, want %s", gens[i].col.Name, short(k.row[i]), short(k.want[i]))
			}
		}
	}
}

// TestValueCacheBounds checks what keeps a cache's memory bounded: its
// slots are emptied at the end of every window (a value that stays hot is
// decoded again), and only maxCachedColumns columns of a row get one.
func TestValueCacheBounds(t *testing.T) {
	var vc valueCache
	var a arena
	values := [][]byte{[]byte("EUR"), []byte("USD"), []byte("GBP")}
	for i := range 3*cacheWindow + 5 {
		src := values[i%len(values)]
		v, ok := vc.decode(stringValue, &a, src)
		if !ok || v != string(src) {
			t.Fatalf("value %d: %v, %v", i, v, ok)
		}
		if vc.lookups == 0 {
			for _, sl := range vc.slots {
				if sl.n != 0 || sl.v != nil {
					t.Fatalf("after %d values, a window ended and a slot still holds %v", i+1, sl.v)
				}
			}
			if vc.skip != 0 {
				t.Fatalf("three values in turn turned the cache off")
			}
		}
	}
	if vc.hits == 0 {
		t.Fatal("no hit after the last window")
	}

	fds := make([]pgconn.FieldDescription, 100)
	cols := make([]mappings.Column, len(fds))
	for i := range fds {
		fds[i] = pgconn.FieldDescription{DataTypeOID: pgtype.TextOID, Format: pgx.BinaryFormatCode}
		cols[i] = mappings.Column{Name: fmt.Sprintf("c%d", i), Type: "text", TypeName: "text", Category: "S"}
	}
	d := &rowDecoder{node: &mappings.Node{Table: &mappings.Table{Name: "wide"}, Columns: cols, Numeric: make([]mappings.NumericMode, len(cols))}, m: pgtype.NewMap(), width: len(cols)}
	d.initCols(fds)
	cached := 0
	for _, c := range d.cols {
		if c.fast == nil {
			t.Fatalf("%s: no direct decoder", c.col.Name)
		}
		if c.cache != nil {
			cached++
		}
	}
	if cached != maxCachedColumns {
		t.Fatalf("%d of %d text columns have a cache, want %d", cached, len(cols), maxCachedColumns)
	}
}
