package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
)

// indexPhaseSQL is two tables whose collections have three indexes in
// all: makers one (unique code), widgets two (unique sku; color with
// maker). dupSKU gives two widgets the same sku.
const indexPhaseSQL = `
CREATE TABLE maker (id int PRIMARY KEY, name text NOT NULL, code text NOT NULL);
CREATE TABLE widget (id int PRIMARY KEY, maker_id int NOT NULL REFERENCES maker, sku text NOT NULL, color text NOT NULL);
INSERT INTO maker SELECT g, 'maker ' || g, 'M' || g FROM generate_series(1, 40) g;
INSERT INTO widget SELECT g, 1 + g % 40, 'sku-' || g, (ARRAY['red', 'green', 'blue'])[1 + g % 3] FROM generate_series(1, 600) g;`

const dupSKU = `UPDATE widget SET sku = 'sku-7' WHERE id = 300;`

const indexPhaseMapping = `version: 1
collections:
  - name: makers
    table: maker
    fields: [name, code]
    indexes:
      - {keys: [code], unique: true}
  - name: widgets
    table: widget
    fields: [maker_id, sku, color]
    indexes:
      - {keys: [sku], unique: true}
      - {keys: [color, makerId]}
`

// statusJob is one job of status --format json, as far as these tests
// read it.
type statusJob struct {
	State   string `json:"state"`
	Phase   string `json:"phase"`
	Indexes *struct {
		Built, Total int
		Missing      []string
	} `json:"indexes"`
	Next string `json:"next"`
}

func jobStatusJSON(t *testing.T, target, job string) statusJob {
	t.Helper()
	code, out, errs := runCLI(t, "status", "--target", target, "--job", job, "--format", "json")
	if code != 0 {
		t.Fatalf("status exit %d\n%s%s", code, out, errs)
	}
	var st struct{ Jobs []statusJob }
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Jobs) != 1 {
		t.Fatalf("status JSON %v:\n%s", err, out)
	}
	return st.Jobs[0]
}

// TestIndexPhaseUniqueViolated: a unique index the documents break (two
// widgets share a sku) leaves the job in its index phase, not complete:
// migrate exits 1 naming the index, says 2 of 3 are built and prints the
// command that resumes; status says "loading done, indexes 2/3 built"
// and names the missing one; a resume before the documents are fixed
// fails the same way, and also notices an index made by hand with other
// options since; once both are fixed in the target, the resume builds
// what is missing and the job is done with all three indexes.
func TestIndexPhaseUniqueViolated(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, indexPhaseSQL+dupSKU)
	target, db := testenv.MongoDB(t)
	mapping := writeMapping(t, indexPhaseMapping)
	args := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--target", target, "--job", "ix"}
	ctx := context.Background()

	expectCLI(t, 1, []string{`index sku_1 (sku) on "widgets"`, "cannot be unique", "2 of 3 indexes built",
		"the job is not complete until its indexes are built", "--job ix --resume\n", "--resume --indexes none"}, args...)
	wantIndexes(t, db, "makers", "code_1(code) unique")
	wantIndexes(t, db, "widgets", "color_1_makerId_1(color,makerId)")
	expectCLI(t, 0, []string{"job ix: stopped, loading done (640 rows read), indexes 2/3 built", "next: denorm migrate"}, "status", "--target", target)
	st := jobStatusJSON(t, target, "ix")
	if st.State != "stopped" || st.Phase != job.PhaseIndexes || st.Indexes == nil || st.Indexes.Built != 2 || st.Indexes.Total != 3 ||
		!slices.Equal(st.Indexes.Missing, []string{"widgets.sku_1"}) || !strings.Contains(st.Next, "--resume") {
		t.Errorf("status JSON of the job = %+v", st)
	}
	// A fresh start is refused: the job is unfinished.
	expectCLI(t, 2, []string{"is unfinished (loading done, 2 of 3 indexes built"}, args...)

	// An index made by hand since, with other options (code_1 not
	// unique): the resume notices it, beside the unique one still broken.
	if err := db.Collection("makers").Indexes().DropOne(ctx, "code_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("makers").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "code", Value: 1}}, Options: options.Index().SetName("code_1")}); err != nil {
		t.Fatal(err)
	}
	out := expectCLI(t, 1, []string{`index sku_1 (sku) on "widgets"`, "1 of 3 indexes built", "--job ix --resume\n"}, append(args, "--resume")...)
	if !strings.Contains(out, `code_1 (code) on "makers"`) {
		t.Errorf("the resume does not notice code_1 made without unique:\n%s", out)
	}

	// Fixed in the target: code_1 dropped, the second widget's sku
	// changed. The resume completes the job.
	if err := db.Collection("makers").Indexes().DropOne(ctx, "code_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("widgets").UpdateOne(ctx, bson.D{{Key: "_id", Value: int32(300)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "sku", Value: "sku-300"}}}}); err != nil {
		t.Fatal(err)
	}
	expectCLI(t, 0, []string{"indexes of widgets: sku_1, color_1_makerId_1"}, append(args, "--resume")...)
	wantIndexes(t, db, "makers", "code_1(code) unique")
	wantIndexes(t, db, "widgets", "sku_1(sku) unique", "color_1_makerId_1(color,makerId)")
	expectCLI(t, 0, []string{"job ix: done, 640 rows read, indexes 3/3 built", "next: nothing; the job is complete"}, "status", "--target", target)
	expectCLI(t, 0, []string{"finished at", "nothing to resume"}, append(args, "--resume")...)
}

// TestIndexPhaseInterrupted interrupts a run in its index phase, once
// the first collection's index is built (the checkpoint gate holds the
// run at the checkpoint that records it; SIGINT): the run prints the
// command that resumes and exits 1; status shows the phase and 1 of 3;
// the resume builds the two missing indexes and the job is done. On
// FerretDB, and on a directory (its .indexes.json files).
func TestIndexPhaseInterrupted(t *testing.T) {
	bin := denormBinary(t)
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, indexPhaseSQL)
	mapping := writeMapping(t, indexPhaseMapping)
	uri, db := testenv.MongoDB(t)
	dir := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		name, target string
		indexes      func(coll string) []string
	}{
		{"ferretdb", uri, func(coll string) []string { return indexesOf(t, db, coll) }},
		{"directory", dir, func(coll string) []string { return dirIndexes(t, dir, coll) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--target", tc.target, "--job", "ixi"}
			g := startGated(t, bin, args...)
			held, _ := g.until(func(c, _ *job.Record) bool {
				built, _ := c.IndexesBuilt()
				return c.Phase == job.PhaseIndexes && built == 1
			}, nil)
			if held == nil {
				g.wait()
				t.Fatalf("the run saved no checkpoint with one index built:\n%s", g.output())
			}
			g.signal(syscall.SIGINT)
			if code := g.wait(); code != 1 {
				t.Fatalf("interrupted run: exit %d, want 1\n%s", code, g.output())
			}
			for _, want := range []string{"interrupted while building indexes (1 of 3 built)", "--job ixi --resume"} {
				if !strings.Contains(g.output(), want) {
					t.Errorf("interrupted run's output lacks %q:\n%s", want, g.output())
				}
			}
			if got := tc.indexes("widgets"); len(got) != 0 {
				t.Errorf("widgets has indexes %v before the resume", got)
			}
			expectCLI(t, 0, []string{"loading done (640 rows read), indexes 1/3 built"}, "status", "--target", tc.target)
			runDenorm(t, bin, append(args, "--resume")...)
			if got, want := tc.indexes("makers"), []string{"code_1(code) unique"}; !slices.Equal(got, want) {
				t.Errorf("makers' indexes = %v, want %v", got, want)
			}
			if got, want := tc.indexes("widgets"), []string{"color_1_makerId_1(color,makerId)", "sku_1(sku) unique"}; !slices.Equal(got, want) {
				t.Errorf("widgets' indexes = %v, want %v", got, want)
			}
			expectCLI(t, 0, []string{"job ixi: done, 640 rows read, indexes 3/3 built"}, "status", "--target", tc.target)
		})
	}
}

// dirIndexes lists the indexes of a directory target's collection as
// indexesOf does, from its .indexes.json file (none when there is none),
// as the target reads it back.
func dirIndexes(t *testing.T, dir, coll string) []string {
	t.Helper()
	tg, err := load.Open(context.Background(), dir, load.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(context.Background())
	idx, _, err := tg.Indexes(context.Background(), coll)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ix := range idx {
		keys := make([]string, len(ix.Keys))
		for i, k := range ix.Keys {
			keys[i] = k.Field
		}
		s := ix.Name + "(" + strings.Join(keys, ",") + ")"
		if ix.Unique {
			s += " unique"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
