package transform

import "fmt"

// Invalid stands in a row for a source value that could not become a
// document value (a ±infinity timestamp, a JSON number out of range, a
// multi-dimensional array...). The row is still read - its keys still
// join - but a document that would hold the value is rejected (a
// RowError, so the run goes on and reports it), never written. Err says
// why; Text is the value in PostgreSQL's text form when it is known, so
// that a key column holding it can still be a stream position.
type Invalid struct {
	Err  error
	Text string
}

func (v Invalid) String() string {
	if v.Text != "" {
		return v.Text
	}
	return fmt.Sprintf("<%v>", v.Err)
}

// invalidIn returns the error of an Invalid value v is, or holds as a
// direct element (an id array, a composite _id) or as a value of a
// document in an array (an id array of composite keys); nil when there is
// none.
// Embedded documents are checked as they are built.
func invalidIn(v any) error {
	switch x := v.(type) {
	case Invalid:
		return x.Err
	case Array:
		for i, e := range x {
			switch y := e.(type) {
			case Invalid:
				return y.Err
			case Doc:
				// an id array of composite keys (a link's): each item a
				// document of key values
				for _, f := range y {
					if iv, ok := f.Value.(Invalid); ok {
						return fmt.Errorf("%d.%s: %w", i, f.Key, iv.Err)
					}
				}
			}
		}
	case Doc:
		for _, f := range x {
			if iv, ok := f.Value.(Invalid); ok {
				return fmt.Errorf("%s: %w", f.Key, iv.Err)
			}
		}
	}
	return nil
}
