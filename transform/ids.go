package transform

import "github.com/denorm/denorm/mappings"

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
			d[i] = Field{Key: c.ValueNames[i], Value: r[col]}
		}
		arr = append(arr, d)
	}
	return arr
}
