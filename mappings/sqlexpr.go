package mappings

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Fields computed by PostgreSQL (sql:) are SQL the user trusts: an
// expression over the row's own columns, evaluated by PostgreSQL in
// denorm's read-only snapshot with the rights of the source role. What
// can be checked without a database is checked here: one expression (no
// statement separator, no top-level comma, balanced parentheses) and no
// subquery (no SELECT, VALUES, TABLE or WITH). With a database, validate
// also refuses functions PostgreSQL marks volatile (they may have side
// effects, and would give another value on every read). Functions called
// through operators, and the rights of the role, are beyond what denorm
// can see: the read-only transaction stops writes, not every function;
// connect with a role that can read and nothing more (see the README).

// subqueryWords start a subquery (or a statement) wherever they appear.
var subqueryWords = []string{"select", "values", "table", "with", "insert", "update", "delete", "merge"}

// CheckSQLExpr checks a sql: field's expression as far as it can be
// without a database; see above.
func CheckSQLExpr(src string) error {
	if strings.TrimSpace(src) == "" {
		return fmt.Errorf("the expression is empty")
	}
	depth := 0
	for _, t := range sqlTokens(src) {
		switch {
		case t.err != "":
			return fmt.Errorf("%s", t.err)
		case t.text == ";":
			return fmt.Errorf("one expression only: \";\" ends a statement")
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
			if depth < 0 {
				return fmt.Errorf("unbalanced parentheses")
			}
		case t.text == "," && depth == 0:
			return fmt.Errorf("one expression only: a top-level \",\" starts another column")
		case t.word && slices.Contains(subqueryWords, strings.ToLower(t.text)):
			return fmt.Errorf("no subqueries: the expression reads the row's own columns (%q)", t.text)
		}
	}
	if depth != 0 {
		return fmt.Errorf("unbalanced parentheses")
	}
	return nil
}

// SQLFunctions lists the names of the functions an expression calls (a
// word before "("), lower-cased unless quoted, for validate's check of
// their volatility.
func SQLFunctions(src string) []string {
	toks := sqlTokens(src)
	var out []string
	for i, t := range toks {
		if (t.word || t.quoted) && i+1 < len(toks) && toks[i+1].text == "(" {
			name := t.text
			if t.word {
				name = strings.ToLower(name)
			}
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

type sqlToken struct {
	text         string
	word, quoted bool
	err          string
}

// sqlTokens splits SQL into words, quoted identifiers and single
// characters, skipping string constants (standard, with E before the quote,
// and dollar quoted), comments and white space.
func sqlTokens(s string) []sqlToken {
	var out []sqlToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return out
			}
			i += j
		case strings.HasPrefix(s[i:], "/*"):
			depth, j := 0, i
			for j < len(s) {
				if strings.HasPrefix(s[j:], "/*") {
					depth, j = depth+1, j+2
				} else if strings.HasPrefix(s[j:], "*/") {
					depth, j = depth-1, j+2
					if depth == 0 {
						break
					}
				} else {
					j++
				}
			}
			if depth != 0 {
				return append(out, sqlToken{err: "unterminated comment"})
			}
			i = j
		case c == '\'' || ((c == 'E' || c == 'e') && i+1 < len(s) && s[i+1] == '\''):
			escapes := c != '\''
			j := i + 1
			if escapes {
				j++
			}
			closed := false
			for j < len(s) {
				switch {
				case escapes && s[j] == '\\':
					j += 2
				case s[j] == '\'' && j+1 < len(s) && s[j+1] == '\'':
					j += 2
				case s[j] == '\'':
					j++
					closed = true
				default:
					j++
				}
				if closed {
					break
				}
			}
			if !closed {
				return append(out, sqlToken{err: "unterminated string constant"})
			}
			i = j
		case c == '"':
			j := i + 1
			var b strings.Builder
			closed := false
			for j < len(s) {
				if s[j] == '"' {
					if j+1 < len(s) && s[j+1] == '"' {
						b.WriteByte('"')
						j += 2
						continue
					}
					closed = true
					j++
					break
				}
				b.WriteByte(s[j])
				j++
			}
			if !closed {
				return append(out, sqlToken{err: "unterminated quoted identifier"})
			}
			out = append(out, sqlToken{text: b.String(), quoted: true})
			i = j
		case c == '$':
			// $1 (a parameter) or a dollar-quoted string $tag$...$tag$.
			j := i + 1
			for j < len(s) && (s[j] == '_' || isWordByte(s[j])) {
				j++
			}
			if j < len(s) && s[j] == '$' {
				tag := s[i : j+1]
				end := strings.Index(s[j+1:], tag)
				if end < 0 {
					return append(out, sqlToken{err: "unterminated dollar-quoted string"})
				}
				i = j + 1 + end + len(tag)
				continue
			}
			out = append(out, sqlToken{text: s[i:j]})
			i = j
		case isWordStart(s[i:]):
			j := i
			for j < len(s) {
				r, size := utf8.DecodeRuneInString(s[j:])
				if r != '_' && r != '$' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				j += size
			}
			out = append(out, sqlToken{text: s[i:j], word: true})
			i = j
		default:
			out = append(out, sqlToken{text: s[i : i+1]})
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= utf8.RuneSelf
}

func isWordStart(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return r == '_' || unicode.IsLetter(r)
}
