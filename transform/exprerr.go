package transform

import (
	"regexp"
	"strings"
)

// exprRunError is an expression's runtime error in a user's words:
// expr-lang reports a NULL column's nil, and its own failures, in Go's
// terms ("interface conversion: interface {} is nil, not bool",
// "invalid operation: <nil> + int", "reflect: call of reflect.Value.Type
// on zero Value"); the reject file and verify's report show the reason to
// users, so it names nil and says how to default it. The original error
// stays reachable (Unwrap).
type exprRunError struct {
	msg string
	err error
}

func (e *exprRunError) Error() string { return e.msg }
func (e *exprRunError) Unwrap() error { return e.err }

// exprGoTerms rewrites the Go terms of expr-lang's runtime messages.
var exprGoTerms = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`interface conversion: interface \{\} is nil, not ([\w.\[\]{} ]+?)( \(\d+:\d+\))`), "a nil value where a $1 is needed$2"},
	{regexp.MustCompile(`interface conversion: interface \{\} is ([\w.\[\]{} ]+?), not ([\w.\[\]{} ]+?)( \(\d+:\d+\))`), "a $1 where a $2 is needed$3"},
	{regexp.MustCompile(`reflect: call of reflect\.Value\.\w+ on zero Value`), "a nil value where a value is needed"},
	{regexp.MustCompile(`\(type <nil>\)`), "(nil)"},
	{regexp.MustCompile(`<nil>`), "nil"},
	{regexp.MustCompile(`runtime error: `), ""},
	{regexp.MustCompile(`map\[string\]interface \{\}`), "map"},
	{regexp.MustCompile(`\[\]interface \{\}`), "array"},
	{regexp.MustCompile(`interface \{\}`), "any value"},
}

// exprError words err, a failure of vm.Run, for users.
func exprError(err error) error {
	msg := err.Error()
	out := msg
	for _, r := range exprGoTerms {
		out = r.re.ReplaceAllString(out, r.with)
	}
	if strings.Contains(out, "nil") && !strings.Contains(msg, "??") {
		// the message names a NULL column's value: say how to avoid it
		first, rest, _ := strings.Cut(out, "\n")
		out = first + " (a NULL column is nil in an expression: give it a default with ??, as in col ?? 0)"
		if rest != "" {
			out += "\n" + rest
		}
	}
	if out == msg {
		return err
	}
	return &exprRunError{msg: out, err: err}
}
