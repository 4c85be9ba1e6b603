package mappings

import (
	"regexp"
	"strings"
)

// exprGoTerms rewrite the Go terms of expr-lang's runtime messages: a
// NULL column is nil in an expression, and expr-lang reports it, and its
// own failures, in Go's words ("interface conversion: interface {} is
// nil, not bool", "invalid operation: <nil> + int", "reflect: call of
// reflect.Value.Type on zero Value"), which reject files and verify's
// reports would show users.
var exprGoTerms = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`interface conversion: interface \{\} is nil, not ([\w.\[\]{} ]+)`), "a nil value where a $1 is needed"},
	{regexp.MustCompile(`interface conversion: interface \{\} is ([\w.\[\]{} ]+?), not ([\w.\[\]{} ]+)`), "a $1 where a $2 is needed"},
	{regexp.MustCompile(`reflect: call of reflect\.Value\.\w+ on zero Value`), "a nil value where a value is needed"},
	{regexp.MustCompile(`\(type <nil>\)`), "(nil)"},
	{regexp.MustCompile(`<nil>`), "nil"},
	{regexp.MustCompile(`runtime error: `), ""},
	{regexp.MustCompile(`map\[string\]interface \{\}`), "map"},
	{regexp.MustCompile(`\[\]interface \{\}`), "array"},
	{regexp.MustCompile(`interface \{\}`), "any value"},
}

// exprWords is msg, an expression's runtime failure, in a user's words:
// nil for a NULL, no Go type names, and the ?? default that avoids a nil.
func exprWords(msg string) string {
	out := msg
	for _, r := range exprGoTerms {
		out = r.re.ReplaceAllString(out, r.with)
	}
	if strings.Contains(out, "nil") && !strings.Contains(out, "??") {
		out += " (a NULL column is nil in an expression: give it a default with ??, as in col ?? 0)"
	}
	return out
}
