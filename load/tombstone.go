package load

// Tombstones: a sync whose collection keeps the documents of deleted root
// rows (the mapping's onDelete: {tombstone: field}) sets a date field on
// them instead of deleting them. A server does it with updateMany, by the
// same chunks of _ids (each bounded by its range) as a delete by _id, and
// only on the documents that do not hold the field yet: a tombstone keeps
// the time it was first set, so a batch written again (a resumed sync)
// changes nothing. A directory cannot change chosen documents, as it
// cannot delete them (no sync).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/transform"
)

// Tombstone sets field to at (a BSON date, milliseconds) on the documents
// of collection that sel picks (by IDs, with Match) and that do not hold
// field yet, and returns how many it changed.
func (s *serverTarget) Tombstone(ctx context.Context, collection string, sel Selection, field string, at time.Time) (int64, error) {
	what := fmt.Sprintf("tombstone documents of %q", collection)
	if sel.IDs == nil || sel.Min != nil || len(sel.Any) > 0 {
		return 0, fmt.Errorf("%s: internal: a tombstone picks documents by _id", what)
	}
	if caps := s.Caps(); caps.NoQuoteInNames && strings.Contains(field, `"`) {
		return 0, fmt.Errorf("%s: %s cannot store a top-level field name holding a double quote (%q): name the tombstone field otherwise", what, caps.Server, field)
	}
	update, err := EncodeDocument(transform.Doc{{Key: "$set", Value: transform.Doc{{Key: field, Value: at.UTC().Truncate(time.Millisecond)}}}})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	coll := s.db.Collection(collection)
	var n int64
	for ids := range slices.Chunk(sel.IDs, deleteChunk) {
		f := selectionFilter(sel, ids)
		f = append(f, transform.Field{Key: field, Value: transform.Doc{{Key: "$exists", Value: false}}})
		filter, err := EncodeDocument(f)
		if err != nil {
			return n, fmt.Errorf("%s: %w", what, err)
		}
		uctx, cancel := bound(ctx, s.op)
		res, err := coll.UpdateMany(uctx, filter, bson.Raw(update))
		cancel()
		if err != nil {
			return n, fmt.Errorf("%s: %w", what, err)
		}
		n += res.ModifiedCount
	}
	return n, nil
}

// Tombstone is refused: a directory's files cannot change chosen
// documents.
func (s *dirTarget) Tombstone(_ context.Context, collection string, _ Selection, _ string, _ time.Time) (int64, error) {
	return 0, &UnsupportedError{Target: "directory", Op: fmt.Sprintf("tombstone chosen documents (collection %q)", collection)}
}
