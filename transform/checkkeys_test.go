package transform

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// nested is a document whose field "a" holds levels-1 more levels of
// documents (arrays when inArrays), the innermost holding 1: the whole
// is levels deep, the document itself counting as one.
func nested(levels int, inArrays bool) Doc {
	var v any = int32(1)
	for i := 1; i < levels; i++ {
		if inArrays {
			v = Array{v}
		} else {
			v = Doc{{Key: "a", Value: v}}
		}
	}
	return Doc{{Key: "a", Value: v}}
}

func TestCheckKeys(t *testing.T) {
	many := Doc{}
	for i := 0; i < 40; i++ {
		many = append(many, Field{Key: fmt.Sprintf("k%d", i), Value: int32(i)})
	}
	for _, c := range []struct {
		name string
		doc  Doc
		path string // "" when the document is fine
		why  string
	}{
		{"plain", Doc{{Key: "_id", Value: int32(1)}, {Key: "a", Value: Doc{{Key: "b", Value: Array{Doc{{Key: "c", Value: "x"}}}}}}}, "", ""},
		{"dollar inside", Doc{{Key: "a$", Value: int32(1)}}, "", ""},
		{"dollar", Doc{{Key: "doc", Value: Doc{{Key: "$date", Value: int32(0)}}}}, "doc.$date", `starting with "$"`},
		{"dot", Doc{{Key: "doc", Value: Doc{{Key: "a.b", Value: int32(0)}}}}, "doc.a.b", `holding "."`},
		{"in an array", Doc{{Key: "x", Value: Array{int32(1), Doc{{Key: "$where", Value: "1"}}}}}, "x.1.$where", `starting with "$"`},
		{"empty", Doc{{Key: "doc", Value: Doc{{Key: "", Value: int32(0)}}}}, "doc.", "empty field name"},
		{"NUL", Doc{{Key: "a\x00b", Value: int32(0)}}, "a\x00b", "NUL"},
		{"repeated", Doc{{Key: "note", Value: "x"}, {Key: "color", Value: "red"}, {Key: "note", Value: "y"}}, "note", "two fields of one document"},
		{"repeated among many", append(append(Doc{}, many...), Field{Key: "k7", Value: int32(0)}), "k7", "two fields of one document"},
		{"same name in two documents", Doc{{Key: "a", Value: Doc{{Key: "n", Value: int32(1)}}}, {Key: "b", Value: Doc{{Key: "n", Value: int32(1)}}}}, "", ""},
		{"100 levels", nested(100, false), "", ""},
		{"101 levels", nested(101, false), strings.Repeat("a.", 99) + "a", "deeper than 100"},
		{"100 levels of arrays", nested(100, true), "", ""},
		{"101 levels of arrays", nested(101, true), "a" + strings.Repeat(".0", 99), "deeper than 100"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckKeys(c.doc)
			if c.path == "" {
				if err != nil {
					t.Fatalf("CheckKeys = %v, want nil", err)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Path != c.path || !strings.Contains(ke.Reason, c.why) {
				t.Fatalf("CheckKeys = %#v, want path %q and a reason with %q", err, c.path, c.why)
			}
			if !strings.Contains(err.Error(), "filter the row") {
				t.Errorf("the message gives no way out: %v", err)
			}
		})
	}
}
