package mappings

import (
	"strings"
	"testing"
)

// TestFieldNameFaults checks the field-name rule on short names (the byte
// loop) and long ones (the searches), and FieldNameProblem's words for it.
func TestFieldNameFaults(t *testing.T) {
	long := strings.Repeat("x", 40)
	for _, tc := range []struct {
		name    string
		want    NameFaults
		problem string
	}{
		{"", NameEmpty, "the name is empty"},
		{"a", 0, ""},
		{long, 0, ""},
		{"_id", 0, ""},
		{"a$", 0, ""},
		{"$a", NameDollar, `the name starts with "$"`},
		{"$" + long, NameDollar, `the name starts with "$"`},
		{"a.b", NameDot, `the name contains "."`},
		{long + ".", NameDot, `the name contains "."`},
		{"a\x00", NameNUL, "the name contains a NUL character"},
		{long + "\x00", NameNUL, "the name contains a NUL character"},
		{"$a.b\x00", NameDollar | NameDot | NameNUL, "the name contains a NUL character"},
		{"$" + long + ".", NameDollar | NameDot, `the name starts with "$"`},
		{"\xff", 0, "the name is not valid UTF-8"},
	} {
		if got := FieldNameFaults(tc.name); got != tc.want {
			t.Errorf("FieldNameFaults(%q) = %b, want %b", tc.name, got, tc.want)
		}
		if got := FieldNameProblem(tc.name); got != tc.problem {
			t.Errorf("FieldNameProblem(%q) = %q, want %q", tc.name, got, tc.problem)
		}
	}
}
