package pipeline

// Verify: rebuild the expected documents from the source with Produce (the
// code migrate runs) and compare them with what the target holds.
//
// Neither side arrives in _id order (bucket page ids, text keys under
// non-C collations, shared collections interleaving document types), so
// both are reduced to records (collection + canonical _id, hash of the
// document's BSON, where the document lies in a spill file), sorted with an
// external merge sort (internal/extsort) and merged. Only documents whose
// hashes differ are read back, from the local spill files, for a field
// diff. Memory is bounded by the sort budget and the batch size whatever
// the number of documents; disk holds one copy of each side.
//
// What counts as equal: the BSON bytes. Key order counts (MongoDB compares
// documents field by field, in order), and so do BSON types: int32 1,
// int64 1 and double 1.0 are different values (a type change is what a
// broken migration or a foreign writer produces, and drivers decode them
// to different types). The exception is what a target cannot represent:
// a directory target's relaxed Extended JSON does not keep int32 apart
// from int64, so the expected documents go through the same round trip
// before they are compared (load.Target.Normalize). For _id alone,
// numbers compare by value, as MongoDB's unique index does: an _id stored
// as int64 where int32 was expected is a differing document, not a missing
// plus an unexpected one.
//
// The references found documents store are checked in dangling.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"time"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/extsort"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/oracle"
	"github.com/denorm/denorm/pipeline/compare"
	"github.com/denorm/denorm/transform"
)

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// BatchSize is the number of root rows read at a time (as migrate).
	BatchSize int
	// TempDir holds the sort runs and spill files ("" is the system's).
	TempDir string
	// SortMemory is the memory budget of each of the three sorters, in
	// bytes (0: 16 MiB).
	SortMemory int
	// Sample, in (0, 100), compares only the documents whose _id hashes
	// into that percentage (the same ones on both sides); 0 or 100 compares
	// all. Both sides are still read in full (bucket pages depend on every
	// row), and dangling references are checked against every document.
	Sample float64
	// MaxFieldDiffs caps the field differences kept per document (0: 100).
	MaxFieldDiffs int
	// Oracle builds the expected side with the independent oracle (SQL
	// compiled from the plan, PostgreSQL's JSON converted by a second
	// implementation of the Types table) instead of Produce.
	Oracle bool
	// SampleRoots, with Oracle, compares only the documents of that many
	// root rows of each collection entry chosen at random (a bucket
	// collection: of that many parents): the oracle builds only those, and
	// the target's other documents are read but not compared.
	SampleRoots int
	// OracleWorkers is the number of connections the oracle builds one
	// collection's documents on at once, each a part of them (entries that
	// cannot be split run on one); 0 or 1: one.
	OracleWorkers int
	// Difference is called with every difference, in collection then _id
	// order (missing, unexpected and differing documents interleaved),
	// after all unbuildable rows; Dangling with every dangling reference.
	// Both are called from Verify's goroutine; an error stops Verify.
	Difference func(Difference) error
	Dangling   func(DanglingRef) error

	// What verify checks beside the documents, each when asked:
	// Indexes, the plan's indexes and shard keys in the target
	// (VerifyResult.Indexes); Since, with Watermarks, the rows written
	// in the source since then (VerifyResult.Writes); Coverage, the rows
	// of the tables of that plan (the whole mapping's, where plan is a
	// part of it) that no document holds, counted on a second connection
	// adopting snap while the documents are compared
	// (VerifyResult.Coverage).
	Indexes    bool
	Since      time.Time
	Watermarks []string
	Coverage   *mappings.Plan
	// Debug, when set, is told how long each step took.
	Debug func(msg string, args ...any)
	// Repair writes the documents found missing or different as the
	// source gives them and deletes the unexpected ones, as it finds them
	// (a server target; not with the oracle, whose documents are a proof,
	// not a builder). Sampled documents only, with Sample. Nothing else
	// must write the collections meanwhile: hold the job's lease, or,
	// with Recheck, pause the running job (Recheck.Pause).
	Repair bool
	// Retry is how repairs' writes retry transient target faults
	// (--retry-for); zero: load.DefaultRetry.
	Retry load.RetryPolicy
	// Recheck, when set, is the job writing the target as verify reads
	// it (a running sync): the documents found different are compared
	// again once the job caught up, and only those that still differ are
	// reported (recheck.go).
	Recheck *Recheck
}

// Difference kinds.
const (
	// DiffMissing: the source gives a document the target does not hold.
	DiffMissing = compare.Missing
	// DiffUnexpected: the target holds a document the source does not give.
	DiffUnexpected = compare.Unexpected
	// DiffDifferent: both hold the _id, with different contents.
	DiffDifferent = compare.Different
	// DiffDuplicate: the target holds the _id more than once (a directory
	// target's file; a server refuses this).
	DiffDuplicate = compare.Duplicate
	// DiffUnbuildable: a source row could not become a document (migrate
	// rejected it too), so the target cannot hold it.
	DiffUnbuildable = "unbuildable"
)

// Difference is one document that is not as the source says.
type Difference struct {
	Collection string          `json:"collection"`
	ID         json.RawMessage `json:"_id,omitempty"`
	Kind       string          `json:"kind"`
	// Source names the source row (or bucket page) of expected documents.
	Source string `json:"source,omitempty"`
	// Fields are the field differences (different), at most
	// MaxFieldDiffs; MoreFields counts those left out.
	Fields     []FieldDiff `json:"fields,omitempty"`
	MoreFields int         `json:"moreFields,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// FieldDiff is one differing value (see load.DiffDocuments).
type FieldDiff = load.FieldDiff

// VerifyStats counts one target collection.
type VerifyStats struct {
	Collection string `json:"collection"`
	// Exists is false when the target has no such collection (or file).
	Exists bool `json:"exists"`
	// Expected and Found count every document of each side; the other
	// counters only the sampled ones.
	Expected    int64 `json:"expected"`
	Found       int64 `json:"found"`
	Identical   int64 `json:"identical"`
	Missing     int64 `json:"missing"`
	Unexpected  int64 `json:"unexpected"`
	Different   int64 `json:"different"`
	Duplicate   int64 `json:"duplicate"`
	Unbuildable int64 `json:"unbuildable"`
	Dangling    int64 `json:"danglingRefs"`
	// OtherTypes counts the documents of a shared collection that are of
	// document types the mapping does not write (another mapping's):
	// neither found nor compared.
	OtherTypes int64 `json:"otherTypes,omitempty"`
	// OracleParts is, with the oracle, the number of parts (connections)
	// its documents were built in.
	OracleParts int `json:"oracleParts,omitempty"`
	// Retained counts the documents whose root row is gone that the
	// collection's onDelete keeps (mappings/ondelete.go): in a tombstone
	// collection those holding the tombstone field (a date), in an ignore
	// collection every one. They are no differences; a tombstone whose
	// root row exists is a different document.
	Retained int64 `json:"retained,omitempty"`
	// Rewritten and Removed count, with Repair, the documents written as
	// the source gives them (missing or different) and deleted
	// (unexpected); Tombstoned those of a tombstone collection that got
	// the field instead of being deleted.
	Rewritten  int64 `json:"rewritten,omitempty"`
	Removed    int64 `json:"removed,omitempty"`
	Tombstoned int64 `json:"tombstoned,omitempty"`
	// Cleared counts, with Recheck, the documents found different by the
	// first comparison and identical once the job caught up (counted
	// as identical, not as differences).
	Cleared int64 `json:"cleared,omitempty"`
}

// Differences is the number of documents not as the source says.
func (s VerifyStats) Differences() int64 {
	return s.Missing + s.Unexpected + s.Different + s.Duplicate + s.Unbuildable
}

// VerifyResult is the outcome of Verify, one entry per target collection
// in mapping order.
type VerifyResult struct {
	Collections []VerifyStats `json:"collections"`
	// Indexes, Writes and Coverage are what VerifyOptions asked for;
	// Unchecked, with the oracle, the fields it did not build
	// independently (expressions).
	Indexes   []IndexCheck             `json:"-"`
	Writes    []extract.TableWrites    `json:"-"`
	Coverage  []mappings.TableCoverage `json:"-"`
	Unchecked []oracle.Unchecked       `json:"-"`
	// Recheck, with VerifyOptions.Recheck, says what the rechecks did.
	Recheck *RecheckStats `json:"-"`
}

// BadIndexes counts the indexes the target does not hold as declared.
func (r *VerifyResult) BadIndexes() (n int64) {
	for _, c := range r.Indexes {
		if c.State != IndexOK {
			n++
		}
	}
	return n
}

// Differences totals the collections' differences.
func (r *VerifyResult) Differences() (n int64) {
	for _, c := range r.Collections {
		n += c.Differences()
	}
	return n
}

// Dangling totals the dangling references.
func (r *VerifyResult) Dangling() (n int64) {
	for _, c := range r.Collections {
		n += c.Dangling
	}
	return n
}

// verifier holds one run's state.
type verifier struct {
	opt     VerifyOptions
	plan    *mappings.Plan
	target  load.Target
	stats   map[string]*VerifyStats
	cmp     *compare.Comparison
	refs    *extsort.Sorter
	refPath map[string][]refPath // by collection
	names   map[string]bool
	// lines is the target when it keeps lines of JSON (a directory):
	// both sides are then compared as those lines where they are equal
	// (load.LineTarget).
	lines load.LineTarget
	// repair, with VerifyOptions.Repair, writes the repairs.
	repair *repairer
	// chosen holds the sort keys of the documents a SampleRoots oracle
	// built: the only ones compared.
	chosen map[string]bool
	// pass is set in a recheck's comparisons, rc in the first comparison
	// of a Verify with Recheck (recheck.go).
	pass *recheckPass
	rc   *rechecker
}

func (v *verifier) sampled(key []byte) bool {
	if v.opt.Sample <= 0 || v.opt.Sample >= 100 {
		return true
	}
	h := fnv.New64a()
	h.Write(key)
	return float64(h.Sum64()%1_000_000) < v.opt.Sample*10_000
}

// Verify compares the documents plan gives from snap with what target
// holds, and returns the counts per collection; every difference and
// dangling reference goes to opt's callbacks. It then checks what opt
// asks for beside (indexes, writes since, coverage) and, with the
// oracle, lists the fields the oracle does not check.
func Verify(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan, target load.Target, opt VerifyOptions) (*VerifyResult, error) {
	if opt.Recheck != nil && opt.Oracle {
		return nil, errors.New("rechecks compare the documents migrate builds; they do not go with the oracle")
	}
	debug := opt.Debug
	if debug == nil {
		debug = func(string, ...any) {}
	}
	start := time.Now()
	var cov *sideCoverage
	if opt.Coverage != nil {
		cov = startCoverage(ctx, snap, opt.Coverage, debug)
		defer cov.stop()
	}
	res, err := compareDocuments(ctx, snap, plan, target, opt, nil)
	if err != nil {
		return nil, err
	}
	if opt.Indexes {
		if res.Indexes, err = CheckIndexes(ctx, target, plan); err != nil {
			return nil, err
		}
	}
	if !opt.Since.IsZero() {
		if res.Writes, err = extract.WritesSince(ctx, snap, plan, opt.Since, opt.Watermarks); err != nil {
			return nil, err
		}
	}
	debug("documents compared", "elapsed", time.Since(start))
	if cov != nil {
		if res.Coverage, err = cov.wait(ctx, snap); err != nil {
			return nil, err
		}
	}
	if opt.Oracle {
		if res.Unchecked, err = OracleUnchecked(plan); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// compareDocuments is Verify's comparison of the documents; pass is set
// for a recheck's comparison (recheck.go).
func compareDocuments(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan, target load.Target, opt VerifyOptions, pass *recheckPass) (*VerifyResult, error) {
	if opt.BatchSize <= 0 {
		opt.BatchSize = 1000
	}
	if opt.SortMemory <= 0 {
		opt.SortMemory = 16 << 20
	}
	if opt.MaxFieldDiffs <= 0 {
		opt.MaxFieldDiffs = 100
	}
	if opt.Difference == nil {
		opt.Difference = func(Difference) error { return nil }
	}
	if opt.Dangling == nil {
		opt.Dangling = func(DanglingRef) error { return nil }
	}
	dir, err := os.MkdirTemp(opt.TempDir, "denorm-verify-*")
	if err != nil {
		return nil, fmt.Errorf("verify temporary directory: %w (set --temp-dir)", err)
	}
	defer os.RemoveAll(dir)
	v := &verifier{opt: opt, plan: plan, target: target, stats: map[string]*VerifyStats{}, names: map[string]bool{}, refPath: map[string][]refPath{}, pass: pass}
	v.cmp, err = compare.New(dir, opt.SortMemory)
	if err != nil {
		return nil, err
	}
	defer v.cmp.Close()
	v.cmp.Sampled = v.sampled
	if lt, ok := target.(load.LineTarget); ok && !opt.Oracle {
		// The oracle's documents are BSON of its own making, never the
		// lines migrate writes: it compares BSON, as before.
		v.lines = lt
		v.cmp.Found.Stored = lt.ReadLine
	}
	if pass != nil {
		v.cmp.Sampled = func(key []byte) bool { return pass.keys[string(key)] != nil }
	} else if opt.Recheck != nil {
		v.rc = newRechecker(opt.Recheck)
	}
	v.refs = extsort.New(dir, "refs", opt.SortMemory)
	defer v.refs.Close()

	res := &VerifyResult{}
	order := plan.CollectionNames()
	for _, name := range order {
		v.names[name] = true
		v.stats[name] = &VerifyStats{Collection: name}
	}
	for _, cp := range plan.Collections {
		if pass == nil { // a recheck checks no references
			v.refPath[cp.Name] = append(v.refPath[cp.Name], refPaths(cp)...)
		}
	}

	if opt.SampleRoots > 0 {
		if !opt.Oracle {
			return nil, errors.New("a sample of root rows needs the oracle")
		}
		// The oracle picks the documents; the target's are compared only
		// when it built them, so it runs first.
		v.chosen = map[string]bool{}
		v.cmp.Sampled = func(key []byte) bool { return v.chosen[string(key)] }
		if err := v.oracleExpected(ctx, snap, plan); err != nil {
			return nil, err
		}
	}

	// The found side is read in the target's own order by a goroutine of
	// its own while the expected side is built, so that both keep a core
	// busy. It touches only its own side, the references and its own
	// counts; the first failure of either side stops the other.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make([]VerifyStats, len(order))
	foundErr := make(chan error, 1)
	types := map[string][]transform.Field{}
	for _, c := range TargetCollections(plan) {
		types[c.Name] = c.Types
	}
	if !opt.Oracle && pass == nil {
		// Built in migrate's own order: the target most likely holds
		// the documents in about that order (compare.Pair). A recheck
		// pass compares few documents, and the hashes of the identical
		// ones too, which a pair has not.
		v.cmp.Pair()
	}
	go func() {
		err := v.scanFound(sctx, order, types, found)
		v.cmp.FoundDone()
		if err != nil {
			cancel()
		}
		foundErr <- err
	}()
	var expErr error
	switch {
	case opt.SampleRoots > 0: // built above
	case opt.Oracle:
		expErr = v.oracleExpected(sctx, snap, plan)
	default:
		expErr = v.expected(sctx, snap, plan)
		v.cmp.ExpectedDone()
	}
	if expErr != nil {
		cancel()
	}
	fErr := <-foundErr
	if expErr != nil && (fErr == nil || !errors.Is(expErr, context.Canceled)) {
		return nil, expErr
	}
	if fErr != nil {
		return nil, fErr
	}
	for i, name := range order {
		v.stats[name].Found, v.stats[name].Exists, v.stats[name].OtherTypes = found[i].Found, found[i].Exists, found[i].OtherTypes
	}
	if err := v.cmp.Flush(); err != nil {
		return nil, err
	}
	if paired, unmatched := v.cmp.Paired(); paired+unmatched > 0 && opt.Debug != nil {
		opt.Debug("expected documents settled with their twin in the target's order", "paired", paired, "unmatched", unmatched)
	}
	if opt.Repair && v.rc == nil { // with rechecks, only what they confirm is repaired
		if opt.Oracle {
			return nil, errors.New("--repair writes the documents migrate builds; it cannot take the oracle's")
		}
		if v.repair, err = newRepairer(target, plan, v.stats, opt.Retry); err != nil {
			return nil, err
		}
	}
	if err := v.merge(ctx); err != nil {
		return nil, err
	}
	if v.repair != nil {
		if err := v.repair.flush(ctx); err != nil {
			return nil, err
		}
	}
	if v.rc != nil {
		if res.Recheck, err = v.rc.run(ctx, snap.Source(), plan, target, opt, v.stats); err != nil {
			return nil, err
		}
	}
	if err := v.dangling(ctx); err != nil {
		return nil, err
	}
	for _, name := range order {
		res.Collections = append(res.Collections, *v.stats[name])
	}
	return res, nil
}

// expBatch is one batch of expected documents handed from the builder to
// the goroutine that adds them (expected): their bytes in data, each a
// line of JSON or a document's BSON.
type expBatch struct {
	coll string
	data []byte
	docs []expDoc
}

type expDoc struct {
	end    int // of the document's bytes in data
	line   bool
	id     load.Value // a line's _id
	source string
}

// expected builds every collection's documents as migrate does and adds
// them to the expected side; rows that cannot be built are differences.
// The documents are encoded where they are built (Produce reuses their
// memory), and hashed and sorted by a goroutine of their own, so that
// building, which is most of the work, is not also that.
func (v *verifier) expected(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan) error {
	batches := make(chan *expBatch, 2)
	free := make(chan *expBatch, 3)
	for range 3 {
		free <- &expBatch{}
	}
	addErr := make(chan error, 1)
	go func() {
		var err error
		for b := range batches {
			if err == nil {
				err = v.addBatch(b)
			}
			free <- b
		}
		addErr <- err
	}()
	err := v.build(ctx, snap, plan, batches, free, addErr)
	close(batches)
	if aerr := <-addErr; err == nil || errors.Is(err, errAddFailed) {
		err = aerr
	}
	return err
}

// errAddFailed stops build once the adding goroutine failed.
var errAddFailed = errors.New("adding expected documents failed")

// addBatch adds one batch's documents to the expected side.
func (v *verifier) addBatch(b *expBatch) error {
	start := 0
	for _, d := range b.docs {
		doc := b.data[start:d.end]
		start = d.end
		var err error
		if d.line {
			err = v.cmp.AddLine(&v.cmp.Exp, b.coll, d.id, doc, d.source, -1)
		} else {
			err = v.cmp.Add(&v.cmp.Exp, b.coll, doc, d.source)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// build runs Produce for every collection, encodes the documents into
// batches and sends them.
func (v *verifier) build(ctx context.Context, snap *extract.Snapshot, plan *mappings.Plan, batches chan<- *expBatch, free <-chan *expBatch, addErr <-chan error) error {
	var buf, nbuf []byte // each document's BSON and normalized BSON
	norm, _ := v.target.(load.AppendNormalizer)
	for _, cp := range plan.Collections {
		st := v.stats[cp.Name]
		err := Produce(ctx, snap, cp, ProduceOptions{BatchSize: v.opt.BatchSize, Reuse: true}, func(b Built) error {
			for _, e := range b.Rejects {
				st.Unbuildable++
				if err := v.opt.Difference(Difference{Collection: cp.Name, Kind: DiffUnbuildable, Source: e.Source, Error: e.Err.Error()}); err != nil {
					return err
				}
			}
			var eb *expBatch
			select {
			case eb = <-free:
			case err := <-addErr:
				if err == nil {
					err = errAddFailed
				}
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
			eb.coll, eb.data, eb.docs = cp.Name, eb.data[:0], eb.docs[:0]
			for _, d := range b.Docs {
				if v.lines != nil {
					// The line migrate writes: compared as text with the
					// target's. Anything it refuses takes the BSON way
					// below, which says why as before.
					start := len(eb.data)
					line, err := v.lines.AppendJSONLine(eb.data, d)
					if err == nil {
						if id, ok := load.LineID(line[start:]); ok {
							st.Expected++
							eb.data = line
							eb.docs = append(eb.docs, expDoc{end: len(line), line: true, id: id, source: d.Source})
							continue
						}
					}
					eb.data = line[:start]
				}
				var raw []byte
				err := transform.CheckKeys(d.Body) // migrate rejects the row
				if err == nil {
					raw, err = load.AppendDocument(buf[:0], d.Body)
					buf = raw
				}
				switch {
				case err != nil:
				case norm != nil:
					if raw, err = norm.AppendNormalize(nbuf, raw); err == nil && len(raw) > 0 && len(buf) > 0 && &raw[0] != &buf[0] {
						nbuf = raw
					}
				default:
					raw, err = v.target.Normalize(raw)
				}
				if err != nil {
					st.Unbuildable++
					if err := v.opt.Difference(Difference{Collection: cp.Name, Kind: DiffUnbuildable, Source: d.Source, Error: err.Error()}); err != nil {
						return err
					}
					continue
				}
				st.Expected++
				eb.data = append(eb.data, raw...)
				eb.docs = append(eb.docs, expDoc{end: len(eb.data), source: d.Source})
			}
			batches <- eb
			return nil
		})
		if err != nil {
			if errors.Is(err, errAddFailed) {
				return err
			}
			return fmt.Errorf("build expected documents: %w", err)
		}
	}
	return nil
}

// scanFound reads every collection of order from the target into the
// found side, counting into found (by position in order). In a shared
// collection, the documents of other types than the plan's (types, by
// collection) are another mapping's: counted apart, not compared.
func (v *verifier) scanFound(ctx context.Context, order []string, types map[string][]transform.Field, found []VerifyStats) error {
	for i, name := range order {
		st := &found[i]
		mine, err := load.TypeMatcher(types[name])
		if err != nil {
			return err
		}
		tombstone := ""
		if mode, field := v.plan.OnDeleteOf(name); mode == mappings.OnDeleteTombstone {
			tombstone = field
		}
		add := func(doc []byte) error {
			if mine != nil && !mine(doc) {
				st.OtherTypes++ // another mapping's document type
				return nil
			}
			st.Found++
			if err := v.cmp.Add(&v.cmp.Found, name, doc, ""); err != nil {
				return err
			}
			if tombstone != "" && load.IsTombstone(doc, tombstone) {
				// What a deleted row referred to may be gone too.
				return nil
			}
			return v.collectRefs(name, doc)
		}
		var exists bool
		if v.lines != nil {
			exists, err = v.scanLines(ctx, name, st, mine, tombstone)
		} else {
			exists, err = v.target.Scan(ctx, name, add)
		}
		st.Exists = exists
		if err != nil {
			return err
		}
	}
	return nil
}

// scanLines reads a collection of a directory target as lines of JSON
// (load.LineTarget): each line is kept where it lies, hashed as it is
// and, unless something needs the document itself (document types,
// tombstones, references), only its _id is parsed.
func (v *verifier) scanLines(ctx context.Context, name string, st *VerifyStats, mine func([]byte) bool, tombstone string) (bool, error) {
	whole := mine != nil || tombstone != "" || len(v.refPath[name]) > 0
	var doc []byte
	return v.lines.ScanLines(ctx, name, func(line []byte, off int64, n int) error {
		id, ok := load.Value{}, false
		if !whole {
			id, ok = load.LineID(line)
		}
		if !ok {
			var err error
			if doc, err = v.lines.ParseLine(doc[:0], name, line, n); err != nil {
				return err
			}
			if mine != nil && !mine(doc) {
				st.OtherTypes++ // another mapping's document type
				return nil
			}
			if id, err = load.DocumentID(doc); err != nil {
				return fmt.Errorf("collection %q: %w", name, err)
			}
		}
		st.Found++
		if err := v.cmp.AddLine(&v.cmp.Found, name, id, line, "", off); err != nil {
			return err
		}
		if !whole || tombstone != "" && load.IsTombstone(doc, tombstone) {
			return nil // a deleted row's references may be gone too
		}
		return v.collectRefs(name, doc)
	})
}

// merge walks both sorted sides together, counting and reporting the
// sampled documents.
func (v *verifier) merge(ctx context.Context) error {
	return v.cmp.Merge(ctx, func(kind string, x, y *compare.Entry) error {
		switch kind {
		case DiffMissing:
			if !x.Sampled() {
				return nil
			}
			v.stats[x.Collection()].Missing++
			d := Difference{Collection: x.Collection(), ID: x.IDJSON(), Kind: DiffMissing, Source: x.Source}
			if v.held(x.Key(), x.Hash(), nil, d) {
				return nil
			}
			if err := v.opt.Difference(d); err != nil {
				return err
			}
			return v.rewrite(ctx, x)
		case DiffUnexpected:
			if !y.Sampled() {
				return nil
			}
			if v.lines != nil {
				// A line no expected one matched: it must still be a
				// document (a corrupt line is a failure, as in a scan).
				if _, err := v.cmp.Found.Read(y); err != nil {
					return err
				}
			}
			if kept, err := v.retained(y); kept || err != nil {
				return err
			}
			v.stats[y.Collection()].Unexpected++
			d := Difference{Collection: y.Collection(), ID: y.IDJSON(), Kind: kind}
			if v.held(y.Key(), nil, y.Hash(), d) {
				return nil
			}
			if err := v.opt.Difference(d); err != nil {
				return err
			}
			if v.repair != nil {
				return v.repair.remove(ctx, y.Collection(), y.IDValue())
			}
			return nil
		case DiffDuplicate:
			d := Difference{Kind: DiffDuplicate, Error: "the target holds this _id more than once"}
			e := y
			if x != nil {
				e = x
				d.Source, d.Error = x.Source, "the source gives this _id to several documents: make the ids distinct (document types of one collection: idPrefix)"
			}
			if !e.Sampled() {
				return nil
			}
			d.Collection, d.ID = e.Collection(), e.IDJSON()
			v.stats[d.Collection].Duplicate++
			return v.opt.Difference(d)
		}
		if !x.Sampled() || !y.Sampled() {
			return nil
		}
		st := v.stats[x.Collection()]
		if kind == compare.Identical {
			st.Identical++
			if v.pass != nil {
				v.pass.seen(x.Key(), kind, x.Hash(), y.Hash(), nil)
			}
			return nil
		}
		want, err := v.cmp.Exp.Read(x)
		if err != nil {
			return err
		}
		got, err := v.cmp.Found.Read(y)
		if err != nil {
			return err
		}
		if bytes.Equal(want, got) {
			// Lines of JSON that differ as text and are the same
			// document (another spelling; a document that took the
			// BSON way): equal BSON is what equal means.
			st.Identical++
			if v.pass != nil {
				v.pass.seen(x.Key(), compare.Identical, x.Hash(), y.Hash(), nil)
			}
			return nil
		}
		st.Different++
		d := Difference{Collection: x.Collection(), ID: y.IDJSON(), Kind: DiffDifferent, Source: x.Source}
		d.Fields, d.MoreFields = load.DiffDocuments(want, got, v.opt.MaxFieldDiffs)
		if v.held(x.Key(), x.Hash(), y.Hash(), d) {
			return nil
		}
		if err := v.opt.Difference(d); err != nil {
			return err
		}
		if v.repair != nil {
			return v.repair.rewrite(ctx, x.Collection(), want, x.Source)
		}
		return nil
	})
}

// retained reports whether y, a document of the target whose root row the
// source no longer gives, is one its collection's onDelete keeps: any in
// an ignore collection, one holding the tombstone field (a date) in a
// tombstone collection. Those are counted as retained.
func (v *verifier) retained(y *compare.Entry) (bool, error) {
	coll := y.Collection()
	mode, field := v.plan.OnDeleteOf(coll)
	switch mode {
	case mappings.OnDeleteIgnore:
	case mappings.OnDeleteTombstone:
		doc, err := v.cmp.Found.Read(y)
		if err != nil || !load.IsTombstone(doc, field) {
			return false, err
		}
	default:
		return false, nil
	}
	v.stats[coll].Retained++
	return true, nil
}

// rewrite repairs a missing document (with Repair): the expected side's
// BSON written as it is.
func (v *verifier) rewrite(ctx context.Context, x *compare.Entry) error {
	if v.repair == nil {
		return nil
	}
	raw, err := v.cmp.Exp.Read(x)
	if err != nil {
		return err
	}
	return v.repair.rewrite(ctx, x.Collection(), raw, x.Source)
}

// sideCoverage counts the rows no document holds on a second connection
// adopting the snapshot, while the documents are compared.
type sideCoverage struct {
	full   *mappings.Plan
	debug  func(string, ...any)
	cancel context.CancelFunc
	done   chan struct{}
	cov    []mappings.TableCoverage
	err    error
}

func startCoverage(ctx context.Context, snap *extract.Snapshot, full *mappings.Plan, debug func(string, ...any)) *sideCoverage {
	ctx, cancel := context.WithCancel(ctx)
	s := &sideCoverage{full: full, debug: debug, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		start := time.Now()
		side, err := snap.Source().Adopt(ctx, snap.ID)
		if err != nil {
			s.err = err
			return
		}
		defer side.Close(context.WithoutCancel(ctx))
		s.cov, s.err = extract.Coverage(ctx, side, full)
		debug("coverage counted", "elapsed", time.Since(start), "connection", "second")
	}()
	return s
}

// wait returns the coverage. Where no second connection could adopt the
// snapshot (extract.ErrNotAdopted), it is counted on snap now.
func (s *sideCoverage) wait(ctx context.Context, snap *extract.Snapshot) ([]mappings.TableCoverage, error) {
	<-s.done
	if errors.Is(s.err, extract.ErrNotAdopted) {
		start := time.Now()
		cov, err := extract.Coverage(ctx, snap, s.full)
		s.debug("coverage counted", "elapsed", time.Since(start), "connection", "first", "why", s.err)
		return cov, err
	}
	return s.cov, s.err
}

// stop ends the count if it still runs (verify failed) and waits for it.
func (s *sideCoverage) stop() {
	s.cancel()
	<-s.done
}
