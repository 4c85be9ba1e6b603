package mappings

import (
	"fmt"
	"slices"
)

// Join keys: how denorm matches a related row to its parent exactly as
// PostgreSQL's own join would.
//
// extract fetches related rows with PostgreSQL's = (so the right rows are
// read), but files them under their parent in Go, by the value of the key.
// Values that PostgreSQL calls equal may differ in bytes: char(n) padding
// ('a' = 'a  '), numeric scale (1 = 1.0 = 1.00), float zero (0 = -0),
// citext case ('Ab' = 'aB'), an integer against a numeric or a float, a
// date against a timestamp. For each pair of join columns Resolve works
// out the type PostgreSQL's = compares them in (it casts the other side
// to it, as the planner does), and when byte equality of the values is
// not that equality, both sides select a key column computed by
// PostgreSQL - the value cast to that type, in a canonical text form (see
// CanonSQL) - which Go compares byte for byte. Keys that are already
// canonical (integers against integers, text against varchar, uuid, an
// enum against itself...) are compared as they are read.
//
// What cannot be done that way is refused: non-deterministic collations
// (equal strings that differ in bytes with no canonical form PostgreSQL
// can compute), and types whose equality is not byte equality and that
// have no canonical form here (interval, jsonb, arrays, ranges,
// geometric and user-defined base types).

// Comparison types of join keys that need a key computed by PostgreSQL
// (Column.Canon).
const (
	CanonNumeric     = "numeric"
	CanonFloat       = "float8"
	CanonText        = "text"
	CanonBpchar      = "bpchar"
	CanonCitext      = "citext"
	CanonDate        = "date"
	CanonTimestamp   = "timestamp"
	CanonTimestampTZ = "timestamptz"
)

// keyRule is how one pair of join columns is compared.
type keyRule struct {
	// canon is the comparison type when both sides need a key computed by
	// PostgreSQL; empty when the values read compare as they are.
	canon string
}

func isInt(t string) bool   { return t == "int2" || t == "int4" || t == "int8" }
func isFloat(t string) bool { return t == "float4" || t == "float8" }
func isString(t string) bool {
	return t == "text" || t == "varchar" || t == "bpchar" || t == "name" || t == "citext"
}
func isDateTime(t string) bool { return t == "date" || t == "timestamp" || t == "timestamptz" }

// exactTypes are the types whose values, read as document values, are
// equal exactly when PostgreSQL's = between two values of the type says
// so (besides integers and strings, handled apart).
var exactTypes = []string{"bool", "uuid", "bytea", "time", "timetz", "inet", "cidr", "macaddr", "macaddr8", "oid", "money", "char", "bit", "varbit"}

// IntKey reports whether a join on columns of these types compares
// integers on both sides.
func IntKey(a, b Column) bool { return isInt(a.TypeName) && isInt(b.TypeName) }

// joinKeyRule is the rule for joining column a (of the related table) to
// column b (of the parent), or an error saying why denorm cannot match
// them as PostgreSQL does.
func joinKeyRule(a, b Column) (keyRule, error) {
	ta, tb := a.TypeName, b.TypeName
	for _, c := range []Column{a, b} {
		if c.NonDeterministic {
			return keyRule{}, fmt.Errorf("collation %q of %s is non-deterministic: PostgreSQL calls values equal that differ in bytes, which denorm cannot group as it does; join on a column with a deterministic collation", c.Collation, c.Name)
		}
	}
	switch {
	case isInt(ta) && isInt(tb):
		return keyRule{}, nil
	case (isInt(ta) || isFloat(ta) || ta == "numeric") && (isInt(tb) || isFloat(tb) || tb == "numeric"):
		// A float on either side makes PostgreSQL compare in double
		// precision (numeric and integers are cast to it); otherwise in
		// numeric.
		if isFloat(ta) || isFloat(tb) {
			return keyRule{canon: CanonFloat}, nil
		}
		return keyRule{canon: CanonNumeric}, nil
	case isString(ta) && isString(tb):
		switch {
		case ta == "citext" && tb == "citext":
			return keyRule{canon: CanonCitext}, nil
		case (ta == "bpchar" || tb == "bpchar") && (ta == "bpchar" || ta == "varchar") && (tb == "bpchar" || tb == "varchar"):
			// char(n) against char(m) or varchar: compared as char,
			// trailing blanks ignored.
			return keyRule{canon: CanonBpchar}, nil
		case ta == "bpchar" || tb == "bpchar":
			// char(n) against text, name or citext: compared as text,
			// the char value without its trailing blanks.
			return keyRule{canon: CanonText}, nil
		}
		// text, varchar, name and citext against another of them: text,
		// byte equality under a deterministic collation.
		return keyRule{}, nil
	case isDateTime(ta) && isDateTime(tb):
		// Read values of these types fail for ±infinity: the key is
		// always PostgreSQL's text, in the wider type.
		canon := CanonDate
		for _, t := range []string{ta, tb} {
			if t == "timestamptz" || (t == "timestamp" && canon == CanonDate) {
				canon = map[string]string{"timestamp": CanonTimestamp, "timestamptz": CanonTimestampTZ}[t]
			}
		}
		return keyRule{canon: canon}, nil
	case ta == tb && (slices.Contains(exactTypes, ta) || (a.Category == "E" && b.Category == "E")):
		return keyRule{}, nil
	case ta == tb || (a.Category == b.Category && a.Category != "U" && a.Category != "A"):
		return keyRule{}, fmt.Errorf("joining on %s is not supported: PostgreSQL's = for it is not byte equality, so denorm could not match the rows as PostgreSQL does; join on another column, or expose a canonical key in a view", typeText(a))
	}
	return keyRule{}, errIncompatible
}

var errIncompatible = fmt.Errorf("incompatible types")

// canonFor is the comparison type of c's values against themselves when
// they must be computed by PostgreSQL to compare as PostgreSQL does (a
// key column's identity: numeric 1.0 and 1.00 are one key), or "".
func canonFor(c Column) string {
	r, err := joinKeyRule(c, c)
	if err != nil {
		return ""
	}
	return r.canon
}

func typeText(c Column) string {
	if c.Domain != "" {
		return fmt.Sprintf("%s (domain %s)", c.Type, c.Domain)
	}
	return c.Type
}

// CanonSQL is the SQL expression computing the key column of the value
// ref (an SQL expression) compared as type canon: the value cast to that
// type, in a text form PostgreSQL gives equal values exactly when its =
// says equal - numeric without trailing zeros (trim_scale), a double
// with -0 made 0, char without its trailing blanks (its cast to text),
// citext in lower case as its = folds it (the database's default
// collation), dates and timestamps as their text in the session's
// settings (shared by every connection of a run).
func CanonSQL(canon, ref string) string {
	switch canon {
	case CanonNumeric:
		return fmt.Sprintf("pg_catalog.trim_scale((%s)::pg_catalog.numeric)::pg_catalog.text", ref)
	case CanonFloat:
		return fmt.Sprintf("((%s)::pg_catalog.float8 + 0::pg_catalog.float8)::pg_catalog.text", ref)
	case CanonBpchar:
		return fmt.Sprintf("(%s)::pg_catalog.bpchar::pg_catalog.text", ref)
	case CanonText:
		return fmt.Sprintf("(%s)::pg_catalog.text", ref)
	case CanonCitext:
		return fmt.Sprintf("pg_catalog.lower((%s)::pg_catalog.text COLLATE pg_catalog.\"default\")", ref)
	case CanonDate, CanonTimestamp, CanonTimestampTZ:
		return fmt.Sprintf("(%s)::pg_catalog.%s::pg_catalog.text", ref, canon)
	}
	panic("mappings: unknown canonical key type " + canon)
}

// CanonParamType is the SQL type the text of a key column of comparison
// type canon is cast back to, so that PostgreSQL compares it with the
// other side's column by the same = as the join (citext: the parent's
// citext type, as the catalog names it).
func CanonParamType(canon string, parent Column) string {
	if canon == CanonCitext {
		return parent.Type
	}
	return "pg_catalog." + canon
}
