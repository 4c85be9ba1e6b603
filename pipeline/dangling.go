package pipeline

// Verify's check of references: every value a found document stores in a
// field declared with ref: must be the _id of a document of the referenced
// collection in the target. The references are collected while the found
// side is scanned, sorted on disk like the documents (internal/extsort),
// and merged with the found side's sorted _ids, so memory stays bounded
// whatever their number.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline/compare"
)

// DanglingRef is a stored reference (a field declared with ref:) to a
// document that does not exist in the target.
type DanglingRef struct {
	Collection    string          `json:"collection"`
	ID            json.RawMessage `json:"_id"`
	Path          string          `json:"path"`
	RefCollection string          `json:"refCollection"`
	Ref           json.RawMessage `json:"ref"`
}

// refPath is where one collection entry stores references: the field path
// (arrays on the way are walked into) and the collection referenced.
type refPath struct {
	steps []string
	coll  string
	// disc selects the entry's documents in a shared collection.
	discKey string
	discVal any
}

// refPaths lists the fields of cp declared with ref:, with the steps to
// them in a stored document (arrays on the way are walked into).
func refPaths(cp *mappings.CollectionPlan) []refPath {
	var out []refPath
	for _, r := range cp.References() {
		var steps []string
		for _, s := range r.Path {
			if s != "[]" {
				steps = append(steps, s)
			}
		}
		out = append(out, refPath{steps: steps, coll: r.Collection, discKey: cp.Discriminator, discVal: cp.DiscriminatorValue})
	}
	return out
}

// collectRefs records the references a found document stores.
func (v *verifier) collectRefs(coll string, doc []byte) error {
	paths := v.refPath[coll]
	if len(paths) == 0 {
		return nil
	}
	idv, err := load.DocumentID(doc)
	if err != nil {
		return nil
	}
	for _, p := range paths {
		if !v.names[p.coll] {
			continue // not a collection of this file: cannot be checked
		}
		if p.discKey != "" {
			got, isString := load.StringField(doc, p.discKey)
			if want, ok := p.discVal.(string); ok && (!isString || got != want) {
				continue // another document type of the shared collection
			}
		}
		var werr error
		load.WalkPath(doc, p.steps, func(path []string, ref load.Value) {
			if werr != nil {
				return
			}
			val, _ := json.Marshal(danglingVal{Collection: coll, ID: idv.JSON(), Path: strings.Join(path, ".")})
			werr = v.refs.Add(compare.IDKey(p.coll, ref), val)
		})
		if werr != nil {
			return werr
		}
	}
	return nil
}

type danglingVal struct {
	Collection string          `json:"c"`
	ID         json.RawMessage `json:"i"`
	Path       string          `json:"p"`
}

// dangling merges the sorted references with the found documents' _ids.
func (v *verifier) dangling(ctx context.Context) error {
	ri, err := v.refs.Iter()
	if err != nil {
		return err
	}
	defer ri.Close()
	f, err := v.cmp.FoundCursor()
	if err != nil {
		return err
	}
	defer f.Close()
	n := 0
	for ri.Next() {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		key := ri.Key()
		for f.At() != nil && bytes.Compare(f.At(), key) < 0 {
			if err := f.Next(); err != nil {
				return err
			}
		}
		if f.At() != nil && bytes.Equal(f.At(), key) {
			continue
		}
		var dv danglingVal
		if err := json.Unmarshal(ri.Value(), &dv); err != nil {
			return fmt.Errorf("verify: corrupt reference record: %w", err)
		}
		refColl := string(key[:bytes.IndexByte(key, 0)])
		v.stats[dv.Collection].Dangling++
		if err := v.opt.Dangling(DanglingRef{Collection: dv.Collection, ID: dv.ID, Path: dv.Path, RefCollection: refColl, Ref: load.KeyJSON(key[len(refColl)+1:])}); err != nil {
			return err
		}
	}
	return ri.Err()
}
