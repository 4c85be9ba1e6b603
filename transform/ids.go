package transform

import (
	"encoding/hex"

	"github.com/denorm/denorm/mappings"
)

// idDocs is an id array of composite keys (a link over a composite
// foreign key): per related row a document of its Values columns named
// ValueNames - the other side's _id -, rows with a NULL among them left
// out, as NULL ids are.
func idDocs(c *mappings.Node, rows [][]any) Array {
	arr := make(Array, 0, len(rows))
rows:
	for _, r := range rows {
		d := make(Doc, len(c.Values))
		for i, col := range c.Values {
			if r[col] == nil {
				continue rows
			}
			d[i] = Field{Key: c.ValueNames[i], Value: DocValue(&c.Columns[col], r[col])}
		}
		arr = append(arr, d)
	}
	return arr
}

// appendUUID appends u in its text form, 8-4-4-4-12 hex digits.
func appendUUID(b []byte, u UUID) []byte {
	b = hex.AppendEncode(b, u[0:4])
	for _, part := range [][2]int{{4, 6}, {6, 8}, {8, 10}, {10, 16}} {
		b = append(b, '-')
		b = hex.AppendEncode(b, u[part[0]:part[1]])
	}
	return b
}
