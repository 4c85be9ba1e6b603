package mappings

// Table names as a mapping writes them, read as PostgreSQL reads a table
// name in SQL: a name is one identifier ("person") or a schema and an
// identifier ("app.person"); an identifier is unquoted (letters, digits,
// "_" and "$", not starting with a digit or "$"; ASCII capitals are folded
// to lower case) or double-quoted (any characters but NUL, kept as they
// are, "" standing for one quote). Spaces around the dot are allowed.
// Three-part names (database.schema.table) are refused: denorm reads the
// database it connects to. An unqualified name is resolved through the
// connected role's search_path, by extract, as PostgreSQL would; the
// catalog's Names record the result (see Catalog).

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxIdentifier is the longest identifier PostgreSQL keeps, in bytes
// (NAMEDATALEN - 1); it truncates longer ones, denorm refuses them.
const MaxIdentifier = 63

// TableName is a table name parsed from a mapping.
type TableName struct {
	// Schema is empty for an unqualified name.
	Schema string
	Name   string
}

// Qualified is the name with its schema in the form Table.QualifiedName
// gives; an unqualified name gets schema def.
func (n TableName) Qualified(def string) string {
	s := n.Schema
	if s == "" {
		s = def
	}
	return QualifiedTableName(s, n.Name)
}

// String is the name as SQL writes it, each identifier quoted when it
// needs to be.
func (n TableName) String() string {
	if n.Schema == "" {
		return QuoteIdent(n.Name)
	}
	return QualifiedTableName(n.Schema, n.Name)
}

// ParseTableName reads a table name as PostgreSQL's SQL does (see the top
// of this file).
func ParseTableName(s string) (TableName, error) {
	var parts []string
	rest := strings.TrimSpace(s)
	if rest == "" {
		return TableName{}, fmt.Errorf("the table name is empty")
	}
	for {
		part, tail, err := identifier(rest)
		if err != nil && strings.HasSuffix(err.Error(), "as SQL does") {
			return TableName{}, fmt.Errorf("%w%s", err, quotedExample(s))
		}
		if err != nil {
			return TableName{}, err
		}
		if len(part) > MaxIdentifier {
			return TableName{}, fmt.Errorf("%q is longer than %d bytes, the longest name PostgreSQL keeps (it would cut it short)", part, MaxIdentifier)
		}
		parts = append(parts, part)
		tail = strings.TrimLeft(tail, " \t")
		if tail == "" {
			break
		}
		if tail[0] != '.' {
			return TableName{}, fmt.Errorf("unexpected %q after %s: quote a name that holds spaces or other characters, as SQL does%s", tail, QuoteIdent(part), quotedExample(s))
		}
		rest = strings.TrimLeft(tail[1:], " \t")
	}
	switch len(parts) {
	case 1:
		return TableName{Name: parts[0]}, nil
	case 2:
		return TableName{Schema: parts[0], Name: parts[1]}, nil
	}
	return TableName{}, fmt.Errorf("%d-part name: denorm reads the tables of the database it connects to, named table or schema.table; quote a name that holds a dot (\"x.y\".z is table z of schema x.y, x.\"y.z\" table y.z of schema x)", len(parts))
}

// identifier reads one identifier at the start of s: its value and what
// follows it.
func identifier(s string) (string, string, error) {
	if s == "" {
		return "", "", fmt.Errorf("a name is missing (a dot at the end, or two dots in a row)")
	}
	if s[0] == '"' {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] != '"' {
				b.WriteByte(s[i])
				continue
			}
			if i+1 < len(s) && s[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			if b.Len() == 0 {
				return "", "", fmt.Errorf(`"" is an empty name`)
			}
			if strings.IndexByte(b.String(), 0) >= 0 {
				return "", "", fmt.Errorf("a name cannot hold a NUL character")
			}
			return b.String(), s[i+1:], nil
		}
		return "", "", fmt.Errorf("a double quote is not closed: %s", s)
	}
	end := 0
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:])
		if !identChar(r, end == 0) {
			break
		}
		end += size
	}
	if end == 0 {
		r, _ := utf8.DecodeRuneInString(s)
		if r == '.' {
			return "", "", fmt.Errorf("a name is missing before a dot")
		}
		return "", "", fmt.Errorf("%q cannot begin a name: quote names that begin with a digit or hold other characters, as SQL does", string(r))
	}
	return foldIdent(s[:end]), s[end:], nil
}

// identChar reports whether r may stand in an unquoted identifier
// (first: at its start), as PostgreSQL's lexer says: ASCII letters, "_",
// any non-ASCII character, and after the first, digits and "$".
func identChar(r rune, first bool) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		return true
	case r >= 0x80 && r != utf8.RuneError:
		return true
	case first:
		return false
	}
	return r >= '0' && r <= '9' || r == '$'
}

// foldIdent folds an unquoted identifier as PostgreSQL does in a UTF-8
// database: ASCII capitals to lower case, other characters kept.
func foldIdent(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// QuoteIdent writes an identifier as SQL reads it back: as it is when it
// is lower-case letters, digits and "_" (not beginning with a digit),
// else in double quotes (PostgreSQL's quote_ident, keywords aside).
func QuoteIdent(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9'
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// QualifiedTableName is the name of table name of schema schema as every
// layer keys tables (Catalog.Tables, Table.QualifiedName): schema.name,
// each quoted when it needs to be (QuoteIdent), so that two tables never
// share it ("x.y".z and x."y.z" differ).
func QualifiedTableName(schema, name string) string {
	return QuoteIdent(schema) + "." + QuoteIdent(name)
}

// SplitQualifiedName splits a name QualifiedTableName made (or a mapping's
// table name, an unqualified one taken as in schema "public") into its
// schema and table name.
func SplitQualifiedName(q string) (schema, name string, err error) {
	n, err := ParseTableName(q)
	if err != nil {
		return "", "", err
	}
	if n.Schema == "" {
		n.Schema = "public"
	}
	return n.Schema, n.Name, nil
}

// quotedExample is, for a name written without quote or dot, the name as
// one quoted identifier in the mapping's YAML: ` (table: '"my-table"')`;
// "" otherwise (which part was meant is not clear).
func quotedExample(s string) string {
	s = strings.TrimSpace(s)
	if strings.ContainsAny(s, `"'.`) {
		return ""
	}
	return fmt.Sprintf(` (table: '"%s"')`, s)
}

// quoteWritten quotes a table name as the mapping writes it, for
// messages: in double quotes, or in single quotes when it holds double
// quotes of its own (SQL's quoting), which %q would escape.
func quoteWritten(s string) string {
	if strings.Contains(s, `"`) && !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	return strconv.Quote(s)
}
