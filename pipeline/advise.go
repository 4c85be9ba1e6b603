package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/mappings/advise"
)

// fanoutSampleAbove: children-per-parent figures of bigger tables come
// from a TABLESAMPLE of about this many rows.
const fanoutSampleAbove = 2_000_000

// exactCountBelow: tables estimated smaller than this are counted exactly.
const exactCountBelow = 100_000

// ErrNoTables is an Advice for a schema that holds no tables.
var ErrNoTables = errors.New("the schema has no tables")

// Advice drafts a mapping file for one schema of a live source: the
// advise command's work. It only reads.
type Advice struct {
	Snapshot *extract.Snapshot
	Schema   string
	Numeric  mappings.NumericMode
	// Target, when known, is what the target can store (advise.Input).
	Target *advise.Target
	// Catalog, when set, is called with the schema's catalog before its
	// statistics are read; an error stops there.
	Catalog func(*mappings.Catalog) error
	// MaxFanout marks, in the draft's fan-out comment, the tables one
	// change of whose rows can make sync rewrite more documents (0:
	// none); Fanout, when set, is called with the draft's fan-out
	// (extract.PredictFanout), every table it reads.
	MaxFanout int64
	Fanout    func([]mappings.TableFanout)
}

// Advise reads a.Schema's catalog and statistics (row counts, exact for
// small tables; children per parent through each foreign key, sampled
// for big tables; activity), and drafts the mapping (advise.Draft) with
// every table's rows covered where the rules allow (draftCovered). It
// returns the mapping file's text and the choices made.
func Advise(ctx context.Context, a Advice) (string, []advise.Choice, error) {
	snap := a.Snapshot
	tables, err := extract.ListTables(ctx, snap, a.Schema)
	if err != nil {
		return "", nil, err
	}
	if len(tables) == 0 {
		return "", nil, ErrNoTables
	}
	cat, err := extract.ReadCatalog(ctx, snap, tables)
	if err != nil {
		return "", nil, err
	}
	if a.Catalog != nil {
		if err := a.Catalog(cat); err != nil {
			return "", nil, err
		}
	}
	act, err := extract.ReadActivity(ctx, snap, tables)
	if err != nil {
		return "", nil, err
	}
	in := advise.Input{Schema: a.Schema, Catalog: cat, Activity: map[string]mappings.TableActivity{}, Fanout: map[string]advise.Fanout{}, Numeric: a.Numeric, Target: a.Target}
	for k, ac := range act {
		if t := cat.Tables[k]; t != nil && ac.Rows < exactCountBelow {
			if ac.Rows, err = extract.CountRows(ctx, snap, t); err != nil {
				return "", nil, err
			}
		}
		in.Activity[k] = ac
	}
	for _, t := range cat.Tables {
		for _, fk := range advise.ForeignKeys(cat, t) {
			f, err := extract.ReadFanout(ctx, snap, t, fk.Columns, fanoutSampleAbove)
			if err != nil {
				return "", nil, err
			}
			in.Fanout[advise.FanoutKey(t, fk)] = advise.Fanout{Parents: f.Parents, Avg: f.Avg, P99: f.P99, Max: f.Max}
		}
	}
	text, choices, err := draftCovered(ctx, snap, cat, in)
	if err != nil {
		return text, choices, err
	}
	text, err = withFanout(ctx, snap, cat, text, a)
	return text, choices, err
}

// fanoutShown is the number of tables the draft's fan-out comment names.
const fanoutShown = 3

// withFanout predicts the draft's fan-out on the data and says it in a
// comment above the mapping: the tables over a.MaxFanout and the worst
// others, up to fanoutShown, each with the place that causes it.
func withFanout(ctx context.Context, snap *extract.Snapshot, cat *mappings.Catalog, text string, a Advice) (string, error) {
	f, err := mappings.Parse("advised.yaml", []byte(text))
	if err != nil {
		return text, err
	}
	plan, err := mappings.Resolve(f, cat)
	if err != nil {
		return text, err
	}
	fan, err := extract.PredictFanout(ctx, snap, plan)
	if err != nil {
		return text, err
	}
	if a.Fanout != nil {
		a.Fanout(fan)
	}
	// After the header, before the mapping.
	i := strings.Index(text, "\nversion:") + 1
	return text[:i] + fanoutComment(fan, a.MaxFanout) + text[i:], nil
}

// fanoutComment is the draft's fan-out comment (see withFanout).
func fanoutComment(fan []mappings.TableFanout, limit int64) string {
	worst := slices.Clone(fan)
	slices.SortStableFunc(worst, func(a, b mappings.TableFanout) int {
		if a.Over(limit) != b.Over(limit) {
			if a.Over(limit) {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.Max, a.Max), cmp.Compare(b.Mean, a.Mean))
	})
	var over int
	for _, t := range fan {
		if t.Over(limit) {
			over++
		}
	}
	var b strings.Builder
	switch {
	case limit <= 0:
		b.WriteString("# Fan-out, counted on the data (documents one change of a row makes sync rewrite; `denorm plan` lists every table):\n")
	case over == 0:
		fmt.Fprintf(&b, "# Fan-out, counted on the data: no table's row change makes sync rewrite more than %d documents (--max-fanout); the largest (`denorm plan` lists every table):\n", limit)
	default:
		fmt.Fprintf(&b, "# Fan-out, counted on the data: %d %s whose one row change can make sync rewrite more than %d documents (--max-fanout); review the choice named (`denorm plan` lists every table):\n", over, plural(over, "table", "tables"), limit)
	}
	for i, t := range worst {
		if i >= max(fanoutShown, over) {
			break
		}
		mark := ""
		if t.Over(limit) {
			mark = "OVER: "
		}
		b.WriteString("#   " + mark + strings.ReplaceAll(t.Summary(), "\n", " ") + "\n")
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// draftCovered drafts the mapping, counts in snap the rows of every table
// the draft reads that reach no document (extract.Coverage), and drafts
// again: tables whose rows have no parent to be stored under become
// collections of their own (advise.Promotions), until none does; then the
// final draft says, at each table, how many rows still reach no document
// and why. Each round costs one coverage statement.
func draftCovered(ctx context.Context, snap *extract.Snapshot, cat *mappings.Catalog, in advise.Input) (string, []advise.Choice, error) {
	in.Promote = map[string]string{}
	for round := 0; ; round++ {
		text, choices, err := advise.Draft(in)
		if err != nil {
			return "", nil, err
		}
		f, err := mappings.Parse("advised.yaml", []byte(text))
		if err == nil {
			var plan *mappings.Plan
			if plan, err = mappings.Resolve(f, cat); err == nil {
				var cov []mappings.TableCoverage
				if cov, err = extract.Coverage(ctx, snap, plan); err != nil {
					return "", nil, err
				}
				promote := advise.Promotions(in, cov)
				if len(promote) > 0 && round < len(cat.Tables) {
					for q, why := range promote {
						in.Promote[q] = why
					}
					continue
				}
				in.Coverage = map[string]mappings.TableCoverage{}
				for _, c := range cov {
					in.Coverage[c.Table] = c
				}
				return advise.Draft(in)
			}
		}
		// The draft is valid by construction (tests hold it to that):
		// this is a bug, told rather than a draft whose coverage is
		// unknown.
		return text, choices, fmt.Errorf("the draft does not resolve against the schema, so its coverage cannot be counted (please report this): %w", err)
	}
}
