package mappings

import "fmt"

// Key types: the columns whose values name a document (a collection's _id
// columns, a bucket collection's parent key) or a stream position (the
// columns a root table is read in order of, and resumed after: the _id
// columns, or a bucket collection's parent key, orderBy and key) must
// hold values that are one scalar each and that PostgreSQL orders. These
// type families do not:
//
//	arrays                  a document _id cannot be an array
//	json, jsonb             values become documents, arrays or other JSON
//	                        values, which cannot name a document nor be
//	                        given back to PostgreSQL as a position
//	xml, geometric types    PostgreSQL has no ordering for them
//	(point, box, ...)
//
// Every other type is written as its document value or PostgreSQL's
// text form (see the README's Types table), which can be both.

// keyTypeProblem says, in the user's terms, why column c cannot be a key
// column: what it is and why that does not work; "" when it can.
func keyTypeProblem(c Column) (what, why string) {
	switch {
	case c.Category == "A":
		return fmt.Sprintf("an array (%s)", typeText(c)), "a document _id cannot be an array, nor can a read resume after one"
	case c.TypeName == "json" || c.TypeName == "jsonb":
		return typeText(c), "its values become documents, arrays or other JSON values, which cannot name a document nor mark where a read resumes"
	case c.TypeName == "xml":
		return typeText(c), "PostgreSQL cannot order xml values, and the rows are read in key order"
	case c.Category == "G":
		return fmt.Sprintf("of geometric type %s", typeText(c)), "PostgreSQL cannot order its values, and the rows are read in key order"
	}
	return "", ""
}
