package pipeline

import (
	"context"
	"fmt"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/oracle"
)

// oracleExpected builds the expected side with the independent oracle
// (package oracle): PostgreSQL builds each collection's documents as JSON
// from SQL compiled from the plan, and the oracle converts them by its own
// Types table and encodes them with the driver's BSON encoder. Nothing of
// Produce, transform or load's encoder is on this path, so a mistake there
// shows up as a difference. Rows stream: one document in memory at a time
// (a bucket collection: one page).
func (v *verifier) oracleExpected(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan) error {
	queries, err := oracle.Compile(plan, oracle.Options{SampleRoots: v.opt.SampleRoots})
	if err != nil {
		return err
	}
	for _, q := range queries {
		name := q.Entry.Name
		st := v.stats[name]
		docs := q.Documents()
		add := func(ds []oracle.Doc) error {
			for _, d := range ds {
				var raw []byte
				err := d.Err
				if err == nil {
					raw, err = v.target.Normalize(d.BSON)
				}
				if err != nil {
					st.Unbuildable++
					if err := v.opt.Difference(Difference{Collection: name, Kind: DiffUnbuildable, Source: d.Source, Error: err.Error()}); err != nil {
						return err
					}
					continue
				}
				st.Expected++
				if v.chosen != nil {
					id, err := load.DocumentID(raw)
					if err != nil {
						return err
					}
					v.chosen[string(idKey(name, id))] = true
				}
				if err := v.cmp.add(&v.cmp.exp, name, raw, d.Source); err != nil {
					return err
				}
			}
			return nil
		}
		err := snap.QueryText(ctx, q.SQL, func(cols [][]byte) error {
			ds, err := docs.Row(cols)
			if err != nil {
				return err
			}
			return add(ds)
		})
		if err == nil {
			err = add(docs.Flush())
		}
		if err != nil {
			return fmt.Errorf("oracle: collection %q: %w", name, err)
		}
	}
	return nil
}

// OracleUnchecked lists, for plan, the fields verify's oracle does not
// check independently of the builder, and why.
func OracleUnchecked(plan *mappings.Plan) ([]oracle.Unchecked, error) {
	queries, err := oracle.Compile(plan, oracle.Options{})
	if err != nil {
		return nil, err
	}
	var out []oracle.Unchecked
	for _, q := range queries {
		out = append(out, q.Unchecked...)
	}
	return out, nil
}
