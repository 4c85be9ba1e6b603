package mappings

// The names a target can hold. Every MongoDB-wire store and a directory
// of files must be able to store a collection and every field of its
// documents, so names are checked against the strictest of their rules:
// at validate for the names the mapping gives (and the columns "*" and
// default names bring), at build time for the names that come from data
// (pivot keys, jsonb objects, expression results).

import (
	"strings"
	"unicode/utf8"
)

// MaxCollectionName is the longest collection name (bytes) FerretDB
// takes; MongoDB's limit is 255 bytes for database and collection names
// together.
const MaxCollectionName = 235

// MaxDepth is MongoDB's nesting limit: a document holds at most 100
// levels of documents and arrays, the document itself being the first.
const MaxDepth = 100

// reservedCollection is the checkpoint store's collection (and directory
// of a directory target); load.RecordCollection has the same value.
const reservedCollection = "_denorm"

// NameFaults is the set of what makes a field name one no target can
// store, one bit each.
type NameFaults uint8

const (
	NameEmpty  NameFaults = 1 << iota // the name is empty
	NameDollar                        // it starts with "$"
	NameDot                           // it holds "."
	NameNUL                           // it holds a NUL
)

// FieldNameFaults is the field-name rule, its one implementation: servers
// treat a name starting with "$" as an operator, and a "." as a path
// (FerretDB refuses both; relaxed Extended JSON reads {"$date": ...} back
// as a date); BSON names end at a NUL; and a name cannot be empty. The
// mapping's names are checked with it at validate (FieldNameProblem), the
// names that come from data at build time (transform.CheckKeys and
// transform.NameOK, which load's writers use too); each spells the faults
// in its own words and order. One pass over a short name, as it runs on
// every field written.
func FieldNameFaults(name string) NameFaults {
	if name == "" {
		return NameEmpty
	}
	var f NameFaults
	if name[0] == '$' {
		f |= NameDollar
	}
	if len(name) > 32 {
		if strings.IndexByte(name, '.') >= 0 {
			f |= NameDot
		}
		if strings.IndexByte(name, 0) >= 0 {
			f |= NameNUL
		}
		return f
	}
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '.':
			f |= NameDot
		case 0:
			f |= NameNUL
		}
	}
	return f
}

// FieldNameProblem says why a target cannot store a field named name, or
// returns "" when it can: FieldNameFaults, and the mapping's names must
// also be valid UTF-8.
func FieldNameProblem(name string) string {
	f := FieldNameFaults(name)
	switch {
	case f&NameEmpty != 0:
		return "the name is empty"
	case f&NameNUL != 0:
		return "the name contains a NUL character"
	case f&NameDollar != 0:
		return `the name starts with "$"`
	case f&NameDot != 0:
		return `the name contains "."`
	case !utf8.ValidString(name):
		return "the name is not valid UTF-8"
	}
	return ""
}

// CollectionNameProblem says why a target cannot hold a collection named
// name, or returns "" when it can: a server's rules (no "$", no leading
// "." or "system." prefix, FerretDB's length limit), a directory's (the
// name is a file name: no path separator, no ".."), and the checkpoint
// store's own name.
func CollectionNameProblem(name string) string {
	switch {
	case name == "":
		return "the name is empty"
	case strings.IndexByte(name, 0) >= 0:
		return "the name contains a NUL character"
	case strings.IndexByte(name, '$') >= 0:
		return `the name contains "$"`
	case strings.ContainsAny(name, `/\`):
		return "the name contains a path separator"
	case strings.Contains(name, ".."):
		return `the name contains ".."`
	case name[0] == '.':
		return `the name starts with "."`
	case strings.HasPrefix(name, "system."):
		return `the "system." prefix is reserved by the server`
	case name == reservedCollection:
		return "denorm keeps its checkpoints there"
	case len(name) > MaxCollectionName:
		return "the name is longer than 235 bytes"
	case !utf8.ValidString(name):
		return "the name is not valid UTF-8"
	}
	return ""
}
