package advise

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/denorm/denorm/mappings"
)

// Names in a draft are made from table and column names, which may hold
// anything PostgreSQL accepts in a quoted identifier. The target accepts
// less: no "." (a path separator), no leading "$" (an operator), no NUL,
// and collection names become file names. So every name advise writes is
// safe: letters, digits and "_" only, camelCased like the mapping's
// default field names, never empty, never "_id" for a field, and unique
// where it must be (a suffix 2, 3, ... tells duplicates apart).

// safeWord keeps letters, digits and "_" of s, every other character
// becoming "_".
func safeWord(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// fieldName is the safe field name for a column or relation name.
func fieldName(s string) string {
	n := strings.Trim(mappings.CamelCase(safeWord(s)), "_")
	switch {
	case n == "" || !strings.ContainsFunc(n, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }):
		return "field"
	case n == "id" && strings.HasPrefix(s, "_"):
		return "id_" // "_id" is the document key
	}
	return n
}

// collectionName is the safe collection name for a (plural) table name:
// no leading "_" (the checkpoint store is "_denorm"), no "system" prefix.
func collectionName(s string) string {
	n := fieldName(s)
	if strings.HasPrefix(strings.ToLower(n), "system") {
		n = "t" + strings.ToUpper(n[:1]) + n[1:]
	}
	return n
}

// uniqueName returns name, or name with the first free suffix 2, 3, ...,
// and marks it used.
func uniqueName(name string, used map[string]bool) string {
	n := name
	for i := 2; used[n]; i++ {
		n = fmt.Sprintf("%s%d", name, i)
	}
	used[n] = true
	return n
}

// plural returns the plural of name's last word (after "_", "-", a space
// or a camelCase boundary), keeping names already plural: order -> orders,
// orders -> orders, category -> categories, status -> statuses, address ->
// addresses, person -> people, staff -> staff.
func plural(name string) string {
	i := lastWord(name)
	return name[:i] + pluralWord(name[i:])
}

// pluralName is the plural of a name made safe first: "x|y" -> "x_ys".
func pluralName(s string) string { return plural(safeWord(s)) }

func lastWord(s string) int {
	rs := []rune(s)
	start := 0
	for i := 1; i < len(rs); i++ {
		switch {
		case strings.ContainsRune("_- .", rs[i-1]):
			start = i
		case unicode.IsUpper(rs[i]) && unicode.IsLower(rs[i-1]):
			start = i
		}
	}
	return len(string(rs[:start]))
}

var irregular = map[string]string{
	"person": "people", "man": "men", "woman": "women", "child": "children", "mouse": "mice", "goose": "geese",
	"foot": "feet", "tooth": "teeth", "ox": "oxen", "datum": "data", "medium": "media", "criterion": "criteria",
	"phenomenon": "phenomena", "leaf": "leaves", "knife": "knives", "wife": "wives", "life": "lives", "half": "halves",
	"shelf": "shelves", "wolf": "wolves", "thief": "thieves", "hero": "heroes", "potato": "potatoes",
	"tomato": "tomatoes", "echo": "echoes", "alias": "aliases", "atlas": "atlases", "canvas": "canvases", "gas": "gases",
	"bias": "biases", "bus": "buses", "lens": "lenses", "iris": "irises", "quiz": "quizzes", "matrix": "matrices",
	"vertex": "vertices", "appendix": "appendices",
}

// unchanged are words whose plural is themselves, or plurals the suffix
// rules would take for singulars.
var unchanged = map[string]bool{
	"staff": true, "data": true, "metadata": true, "information": true, "info": true, "equipment": true, "news": true,
	"series": true, "species": true, "sheep": true, "fish": true, "deer": true, "feedback": true, "software": true,
	"hardware": true, "media": true, "audio": true, "aircraft": true, "personnel": true, "people": true, "men": true,
	"women": true, "children": true, "mice": true, "geese": true, "feet": true, "teeth": true, "criteria": true,
	"phenomena": true, "indices": true, "menus": true, "gurus": true, "emus": true, "haikus": true,
}

func pluralWord(w string) string {
	lw := strings.ToLower(w)
	if lw == "" || unchanged[lw] {
		return w
	}
	p, ok := irregular[lw]
	switch {
	case ok:
	case strings.HasSuffix(lw, "is") && len(lw) > 3:
		p = lw[:len(lw)-2] + "es" // analysis -> analyses
	case strings.HasSuffix(lw, "s") && !strings.HasSuffix(lw, "ss") && !strings.HasSuffix(lw, "us"):
		return w // already plural: orders, employees, categories, statuses
	case strings.HasSuffix(lw, "s"), strings.HasSuffix(lw, "x"), strings.HasSuffix(lw, "z"), strings.HasSuffix(lw, "ch"), strings.HasSuffix(lw, "sh"):
		p = lw + "es"
	case strings.HasSuffix(lw, "y") && len(lw) > 1 && !strings.ContainsRune("aeiou", rune(lw[len(lw)-2])):
		p = lw[:len(lw)-1] + "ies"
	default:
		p = lw + "s"
	}
	switch {
	case w == strings.ToUpper(w) && w != lw:
		return strings.ToUpper(p)
	case unicode.IsUpper([]rune(w)[0]):
		r := []rune(p)
		return string(unicode.ToUpper(r[0])) + string(r[1:])
	}
	if len(w) != len(lw) {
		return p
	}
	n := commonPrefix(lw, p) // keep the word's own case: iPhone -> iPhones
	return w[:n] + p[n:]
}

// singular returns the singular of name's last word, the inverse of
// plural for regular words: products -> product, categories -> category,
// order_details -> order_detail, addresses -> address, people -> person;
// names already singular stay (status, address, staff).
func singular(name string) string {
	i := lastWord(name)
	w := name[i:]
	lw := strings.ToLower(w)
	s := lw
	switch {
	case lw == "":
	case singularOf[lw] != "":
		s = singularOf[lw]
	case unchanged[lw]:
	case strings.HasSuffix(lw, "ies") && len(lw) > 3:
		s = lw[:len(lw)-3] + "y"
	case strings.HasSuffix(lw, "sses"), strings.HasSuffix(lw, "xes"), strings.HasSuffix(lw, "zes"), strings.HasSuffix(lw, "ches"), strings.HasSuffix(lw, "shes"):
		s = lw[:len(lw)-2]
	case strings.HasSuffix(lw, "s") && !strings.HasSuffix(lw, "ss") && !strings.HasSuffix(lw, "us") && !strings.HasSuffix(lw, "is") && len(lw) > 1:
		s = lw[:len(lw)-1]
	}
	if s == lw {
		return name
	}
	if w != lw { // keep a capital first letter: Products -> Product
		n := commonPrefix(strings.ToLower(w), s)
		return name[:i] + w[:n] + s[n:]
	}
	return name[:i] + s
}

// singularOf inverts irregular.
var singularOf = func() map[string]string {
	m := map[string]string{}
	for one, many := range irregular {
		m[many] = one
	}
	return m
}()

func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// relationName is the name of a lookup or an embedded copy made from a
// foreign key column: the column without its _id (or _key) suffix.
func relationName(col string) string {
	n := strings.TrimSuffix(strings.TrimSuffix(col, "_id"), "_key")
	if n == col || n == "" {
		n = col + "_ref"
	}
	return n
}

var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// y writes s as a YAML scalar, quoted when needed (Go's double-quoted
// escapes are YAML's).
func y(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n", "~":
		return fmt.Sprintf("%q", s)
	}
	if plainName.MatchString(s) {
		return s
	}
	return fmt.Sprintf("%q", s)
}

// commentText makes s safe inside a YAML comment: one line, printable.
func commentText(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		if unicode.IsSpace(r) {
			return ' '
		}
		return '?'
	}, s)
}
