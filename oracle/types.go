package oracle

// The oracle's own Types table: how a column is selected into PostgreSQL's
// JSON (sqlValue) and how that JSON becomes a BSON value (convert.go). It
// is written from the Types table of docs/types.md, not from extract's or load's
// code, so that a mistake in either shows up as a difference.
//
//	PostgreSQL                     in the JSON                 BSON
//	smallint, integer              number                      int32
//	bigint                         number                      int64
//	numeric                        number, "NaN", "Infinity"   Decimal128 | double | string (numeric mode)
//	real, double precision         number, "NaN", "±Infinity"  double (real through its shortest text)
//	text, varchar, name, citext    string (citext as ::text)   string
//	char(n)                        string, padded              string without trailing blanks (char: keep keeps them)
//	boolean                        true / false                boolean
//	date                           "2024-01-01[ BC]"           date at midnight UTC
//	timestamp                      "2024-01-01T10:00:00.1[ BC]" date (UTC), milliseconds rounded toward the past
//	timestamptz                    the same with "+hh:mm"      the same instant
//	uuid                           string                      binary subtype 4
//	bytea                          "\\x0a0b"                   binary subtype 0
//	json, jsonb                    the value                   document / array / scalars (numbers: see jsonNumber)
//	enums, every other type        their text (::text)         string
//	arrays                         array (dims checked)        array of the element's values, NULL as null
//	a domain                       its base type
//	an sql: field                  to_json of the value        as json
//
// ±infinity dates, arrays of more than one dimension or with a lower bound
// other than 1, a double mode number out of a double's range or a non-zero
// one that a double rounds to zero, a Decimal128 that cannot hold the
// number: the document is not buildable (the row is rejected).

import (
	"strings"

	"github.com/denorm/denorm/mappings"
)

// family is what the oracle makes of one PostgreSQL type.
type family int

const (
	famText    family = iota // any type written as its text output
	famInt32                 // int2, int4
	famInt64                 // int8
	famNumeric               // numeric
	famFloat4                // real
	famFloat8                // double precision
	famString                // text, varchar, name, citext
	famBpchar                // char(n)
	famBool
	famDate
	famTimestamp
	famTimestampTZ
	famUUID
	famBytea
	famJSON // json, jsonb, and sql: fields
)

// familyOf classifies a type by its pg_type.typname (a domain's base type
// name, as the catalog gives it).
func familyOf(typeName string) family {
	switch typeName {
	case "int2", "int4":
		return famInt32
	case "int8":
		return famInt64
	case "numeric":
		return famNumeric
	case "float4":
		return famFloat4
	case "float8":
		return famFloat8
	case "text", "varchar", "name", "citext":
		return famString
	case "bpchar":
		return famBpchar
	case "bool":
		return famBool
	case "date":
		return famDate
	case "timestamp":
		return famTimestamp
	case "timestamptz":
		return famTimestampTZ
	case "uuid":
		return famUUID
	case "bytea":
		return famBytea
	case "json", "jsonb":
		return famJSON
	}
	return famText
}

// valueType says how the JSON of one selected value becomes BSON.
type valueType struct {
	fam family
	// array: the value is a one-dimensional array of fam values.
	array bool
	// numeric is the numeric mode of NUMERIC values (and of JSON numbers
	// beyond a double).
	numeric mappings.NumericMode
	// keep: char(n) keeps its blank padding.
	keep bool
	// timeText: timestamps are written as ISO 8601 text (timestamp: string).
	timeText bool
	// desc names the type in messages.
	desc string
	// exactSum: the value is exactSum's text of a sum or an average.
	exactSum bool
}

// typeOf is the value type of column c of a node, written with numeric
// mode mode.
func typeOf(c mappings.Column, mode mappings.NumericMode) valueType {
	vt := valueType{numeric: mode, keep: c.KeepPadding, timeText: columnTimeText(c), desc: c.Type}
	if vt.desc == "" {
		vt.desc = c.TypeName
	}
	if c.SQL != "" {
		vt.fam = famJSON
		vt.desc = "sql: " + c.SQL
		return vt
	}
	if isArray(c) {
		vt.array = true
		vt.fam = familyOf(c.ElemTypeName)
		return vt
	}
	vt.fam = familyOf(c.TypeName)
	return vt
}

// isArray tells true arrays (int2vector and oidvector are category A too,
// and are written as their text).
func isArray(c mappings.Column) bool {
	return c.Category == "A" && c.ElemTypeName != "" && c.TypeName == "_"+c.ElemTypeName
}

// sqlValue is the SQL expression giving the JSON-ready value of column c
// from ref, the column's reference in the oracle's query: types written as
// their text are cast to text first; an array is replaced by a small
// object naming its dimensions when it has more than one or does not start
// at 1, which no array value can be, so that convert rejects it.
func sqlValue(c mappings.Column, ref string) string {
	if c.SQL != "" {
		return ref
	}
	if !isArray(c) {
		switch familyOf(c.TypeName) {
		case famText:
			return "(" + ref + ")::pg_catalog.text"
		case famString:
			if c.TypeName == "citext" {
				return "(" + ref + ")::pg_catalog.text"
			}
		}
		return ref
	}
	v := ref
	switch familyOf(c.ElemTypeName) {
	case famText:
		v = "(" + ref + ")::pg_catalog.text[]"
	case famString:
		if c.ElemTypeName == "citext" {
			v = "(" + ref + ")::pg_catalog.text[]"
		}
	}
	return "CASE WHEN pg_catalog.array_ndims(" + ref + ") > 1 OR pg_catalog.array_lower(" + ref + ", 1) <> 1" +
		" THEN pg_catalog.json_build_object('dims', pg_catalog.array_dims(" + ref + "))" +
		" ELSE pg_catalog.to_json(" + v + ") END"
}

// notNullSQL is the condition that column c's value at ref is there, as
// denorm counts values: not NULL and, for json and jsonb (and domains over
// them), not JSON null either, which migrate leaves out as it does a NULL
// (a field, a row of an id array). It is not migrate's code: PostgreSQL
// tells the JSON null by json_typeof.
func notNullSQL(c mappings.Column, ref string) string {
	if c.SQL == "" && !isArray(c) {
		switch c.TypeName {
		case "json":
			return "(" + ref + " IS NOT NULL AND pg_catalog.json_typeof((" + ref + ")::pg_catalog.json) <> 'null')"
		case "jsonb":
			return "(" + ref + " IS NOT NULL AND pg_catalog.jsonb_typeof((" + ref + ")::pg_catalog.jsonb) <> 'null')"
		}
	}
	return ref + " IS NOT NULL"
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// quoteLiteral quotes an SQL string literal.
func quoteLiteral(s string) string {
	if strings.Contains(s, `\`) {
		return "E'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// tableRef is the reference of table t.
func tableRef(t *mappings.Table) string { return quoteIdent(t.Schema) + "." + quoteIdent(t.Name) }

// columnTimeText reports whether c's timestamps are written as text.
func columnTimeText(c mappings.Column) bool { return c.TimestampText }
