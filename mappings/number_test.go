package mappings

import (
	"encoding/json"
	"testing"
)

// TestRowBoundsInSchema checks that schema.json's maximum of every row
// count is MaxRows, the bound the README states.
func TestRowBoundsInSchema(t *testing.T) {
	var s struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Maximum *int `json:"maximum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema, &s); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ def, prop string }{{"bucket", "size"}, {"bucket", "skipLast"}, {"embed", "limit"}, {"ids", "limit"}} {
		m := s.Defs[c.def].Properties[c.prop].Maximum
		if m == nil || *m != MaxRows {
			t.Errorf("schema.json %s.%s: maximum %v, want %d", c.def, c.prop, m, MaxRows)
		}
	}
}

// TestNumberKey checks that discriminator values compare as MongoDB
// compares them.
func TestNumberKey(t *testing.T) {
	same := [][2]any{{int32(1), float64(1)}, {int64(1 << 40), float64(1 << 40)}, {float64(0), -0.0}, {int32(0), -0.0}}
	for _, p := range same {
		if numberKey(p[0]) != numberKey(p[1]) {
			t.Errorf("%#v and %#v should be one value", p[0], p[1])
		}
	}
	differ := [][2]any{{int32(1), "1"}, {0.5, "0.5"}, {int64(1<<53 + 1), float64(1 << 53)}, {true, "true"}}
	for _, p := range differ {
		if numberKey(p[0]) == numberKey(p[1]) {
			t.Errorf("%#v and %#v should differ", p[0], p[1])
		}
	}
}
