package oracle

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// reader walks the JSON text PostgreSQL built, one value at a time, in the
// order the oracle's shape expects it. It is its own small parser (not
// extract's, which goes through encoding/json) so that it shares nothing
// with the builder's reading of JSON columns.
//
// PostgreSQL's json_build_array output is valid JSON; a reader error is a
// fault of the oracle's query or of this parser, never of the data, and is
// reported as such (badJSON).
type reader struct {
	b []byte
	i int
}

// badJSON is a reader error: the text is not what the oracle's query
// builds.
type badJSON struct {
	at  int
	msg string
}

func (e *badJSON) Error() string {
	return fmt.Sprintf("oracle: unexpected JSON at byte %d: %s", e.at, e.msg)
}

func (r *reader) fail(format string, args ...any) error {
	return &badJSON{at: r.i, msg: fmt.Sprintf(format, args...)}
}

func (r *reader) skipSpace() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the next non-blank byte (0 at the end).
func (r *reader) peek() byte {
	r.skipSpace()
	if r.i >= len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// expect consumes byte c.
func (r *reader) expect(c byte) error {
	if r.peek() != c {
		return r.fail("want %q", c)
	}
	r.i++
	return nil
}

// elements reads the elements of a JSON array whose '[' is read, each by
// elem given its index, up to its ']'.
func (r *reader) elements(elem func(i int) (any, error)) (bson.A, error) {
	out := bson.A{}
	for first := true; ; first = false {
		ok, err := r.more(']', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			return out, nil
		}
		v, err := elem(len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// more reports, inside an object or array, whether another member
// follows (consuming the comma), or the end (consuming the closing byte
// end).
func (r *reader) more(end byte, first bool) (bool, error) {
	c := r.peek()
	if c == end {
		r.i++
		return false, nil
	}
	if !first {
		if c != ',' {
			return false, r.fail("want ',' or %q", end)
		}
		r.i++
	}
	return true, nil
}

// null consumes a null and reports whether there was one.
func (r *reader) null() bool {
	if r.peek() == 'n' && r.i+4 <= len(r.b) && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// str reads a string.
func (r *reader) str() (string, error) {
	if r.peek() != '"' {
		return "", r.fail("want a string")
	}
	r.i++
	start := r.i
	// Fast path: no escapes.
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			s := string(r.b[start:r.i])
			r.i++
			return s, nil
		}
		if c == '\\' {
			break
		}
		r.i++
	}
	out := append([]byte(nil), r.b[start:r.i]...)
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch c {
		case '"':
			r.i++
			return string(out), nil
		case '\\':
			if r.i+1 >= len(r.b) {
				return "", r.fail("cut escape")
			}
			e := r.b[r.i+1]
			r.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				u, err := r.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(u) {
					if r.i+6 <= len(r.b) && r.b[r.i] == '\\' && r.b[r.i+1] == 'u' {
						r.i += 2
						u2, err := r.hex4()
						if err != nil {
							return "", err
						}
						u = utf16.DecodeRune(u, u2)
					} else {
						u = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, u)
			default:
				return "", r.fail("bad escape \\%c", e)
			}
		default:
			out = append(out, c)
			r.i++
		}
	}
	return "", r.fail("unterminated string")
}

func (r *reader) hex4() (rune, error) {
	if r.i+4 > len(r.b) {
		return 0, r.fail("cut \\u escape")
	}
	v, err := strconv.ParseUint(string(r.b[r.i:r.i+4]), 16, 16)
	if err != nil {
		return 0, r.fail("bad \\u escape")
	}
	r.i += 4
	return rune(v), nil
}

// number reads a number's text.
func (r *reader) number() (string, error) {
	r.skipSpace()
	start := r.i
	for r.i < len(r.b) {
		c := r.b[r.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			r.i++
			continue
		}
		break
	}
	if r.i == start {
		return "", r.fail("want a number")
	}
	return string(r.b[start:r.i]), nil
}

// boolean reads true or false.
func (r *reader) boolean() (bool, error) {
	r.skipSpace()
	switch {
	case r.i+4 <= len(r.b) && string(r.b[r.i:r.i+4]) == "true":
		r.i += 4
		return true, nil
	case r.i+5 <= len(r.b) && string(r.b[r.i:r.i+5]) == "false":
		r.i += 5
		return false, nil
	}
	return false, r.fail("want a boolean")
}

// scalarText reads a number or a string and returns its text, and
// whether it was a string.
func (r *reader) scalarText() (string, bool, error) {
	if r.peek() == '"' {
		s, err := r.str()
		return s, true, err
	}
	s, err := r.number()
	return s, false, err
}

// skip reads past one value of any kind.
func (r *reader) skip() error {
	switch r.peek() {
	case '{', '[':
		end := byte('}')
		if r.b[r.i] == '[' {
			end = ']'
		}
		obj := end == '}'
		r.i++
		for first := true; ; first = false {
			ok, err := r.more(end, first)
			if err != nil || !ok {
				return err
			}
			if obj {
				if _, err := r.str(); err != nil {
					return err
				}
				if err := r.expect(':'); err != nil {
					return err
				}
			}
			if err := r.skip(); err != nil {
				return err
			}
		}
	case '"':
		_, err := r.str()
		return err
	case 't', 'f':
		_, err := r.boolean()
		return err
	case 'n':
		if r.null() {
			return nil
		}
	}
	_, err := r.number()
	return err
}
