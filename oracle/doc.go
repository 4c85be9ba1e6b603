// Package oracle is verify's independent oracle: a second way of computing
// the documents a mapping gives, sharing none of migrate's code, so that a
// mistake in migrate's builder shows up as a difference instead of being
// made twice (the way SQLancer checks a database against a second
// computation of the same answer).
//
// Compile turns a resolved plan into one SQL statement per collection
// entry in which PostgreSQL builds every document as JSON: the joins are
// the mapping's, by PostgreSQL's own =; orders, limits, lookups, id arrays,
// aggregates and filters are PostgreSQL's (compile.go). Documents reads
// that JSON with its own parser (json.go), converts each value by its own
// implementation of the README's Types table (types.go, convert.go,
// date.go), applies the field-name rules (names.go), cuts bucket pages
// (build.go) and writes BSON by its own walk over the values (encode.go).
// It is pure: pipeline runs the statements (through extract) and compares.
//
// Limits, each said where it applies: expr: fields run on the shared
// expression engine (mappings.RunExpr), on inputs the oracle read itself,
// and are listed as not checked independently (Query.Unchecked); Decimal128
// values are parsed by the driver's ParseDecimal128, as the target's own
// reading of the text. It imports neither transform, extract nor load
// (internal/layering holds it to that).
package oracle
