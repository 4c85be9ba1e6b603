package extract

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/denorm/denorm/mappings"
)

// TestRelationRuns adds rows whose keys come mostly in runs, sometimes
// interrupted and resumed, and checks that every key gives back exactly
// its rows in the order added, for integer and for text keys. Half the
// rounds keep integer keys in increasing order with gaps (the runs found
// by cursor and binary search, no map), asked for in order, in random
// order and twice.
func TestRelationRuns(t *testing.T) {
	for _, typ := range []string{"int4", "text"} {
		t.Run(typ, func(t *testing.T) {
			parent := &mappings.Node{Columns: []mappings.Column{{Name: "id", TypeName: typ}}, Numeric: make([]mappings.NumericMode, 1)}
			n := &mappings.Node{Parent: parent, Columns: []mappings.Column{{Name: "pid", TypeName: typ}, {Name: "v", TypeName: "int4"}},
				JoinCols: []int{0}, ParentCols: []int{0}, Numeric: make([]mappings.NumericMode, 2)}
			key := func(k int) any {
				if typ == "int4" {
					return int32(k)
				}
				return fmt.Sprint("k", k)
			}
			r := rand.New(rand.NewPCG(3, 4))
			sortedRounds := 0
			for round := range 400 {
				rel := newRelation(n, 0, 0)
				want := map[any][][]any{}
				k := 0
				sorted := round%2 == 0
				for i := range 300 {
					switch x := r.IntN(10); {
					case x < 6: // same key
					case x < 9 || sorted:
						k += 1 + r.IntN(3)*(round%4/2) // with gaps in some rounds
					default: // back to an earlier key
						k = r.IntN(k + 1)
					}
					row := []any{key(k), int32(i)}
					if r.IntN(40) == 0 {
						row[0] = nil // NULL joins nothing
					} else {
						want[row[0]] = append(want[row[0]], row)
					}
					rel.add(n, row)
				}
				if typ == "int4" && sorted {
					if rel.ints.index != nil {
						t.Fatalf("round %d: keys in order built a map", round)
					}
					sortedRounds++
				}
				asks := make([]int, 0, 3*(k+2))
				for kk := range k + 2 {
					asks = append(asks, kk)
				}
				for _, kk := range r.Perm(k + 2) {
					asks = append(asks, kk, kk)
				}
				for _, kk := range append(asks, -1) {
					got := rel.get(n, []any{key(kk)})
					if w := want[key(kk)]; !reflect.DeepEqual(got, w) && (len(got) != 0 || len(w) != 0) {
						t.Fatalf("round %d, key %v: got %v, want %v", round, key(kk), got, w)
					}
				}
				var all, wantAll []string
				for _, row := range rel.all() {
					all = append(all, fmt.Sprint(row))
				}
				for _, rows := range want {
					for _, row := range rows {
						wantAll = append(wantAll, fmt.Sprint(row))
					}
				}
				slices.Sort(all)
				slices.Sort(wantAll)
				if !slices.Equal(all, wantAll) {
					t.Fatalf("round %d: all() gives %d rows, want %d", round, len(all), len(wantAll))
				}
				if got := rel.get(n, []any{nil}); got != nil {
					t.Fatalf("NULL parent key gives %v", got)
				}
			}
			if typ == "int4" && sortedRounds != 200 {
				t.Fatalf("%d rounds in key order, want 200", sortedRounds)
			}
		})
	}
}
