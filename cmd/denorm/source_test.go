package main

// Regression tests of how the source is read (issue 25, classes 1, 2, 6,
// 9 and 13): inheritance parents read as ONLY, row-level security refused
// or acknowledged, table names resolved as PostgreSQL does, ties broken
// whatever the rows' physical order, and ±infinity keys rejected row by
// row.

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
)

// targets are a directory and a server target for one test, and how to
// read a collection back from each (a directory in file order, a server
// sorted by _id).
type sourceTarget struct {
	name, uri string
	docs      func(coll string) []string
}

func sourceTargets(t *testing.T) []sourceTarget {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	uri, db := testenv.MongoDB(t)
	return []sourceTarget{
		{"directory", dir, func(coll string) []string {
			if _, err := os.Stat(filepath.Join(dir, coll+".jsonl")); err != nil {
				return nil
			}
			return testenv.ReadLines(t, filepath.Join(dir, coll+".jsonl"))
		}},
		{"server", uri, func(coll string) []string { return testenv.DumpCollection(t, db, coll) }},
	}
}

func wantDocs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestInheritanceParentReadsOwnRows: a table with inheritance children is
// read as ONLY the table wherever the mapping reads it (root, embed, id
// array, aggregate), so its keys are unique: a child row sharing a
// parent's key neither overwrites the parent's document on a server nor
// duplicates it in a directory, as it did when the children's rows were
// read with the parent's. validate and plan say what is not read; a
// partitioned table is still read whole.
func TestInheritanceParentReadsOwnRows(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE measurement (id int PRIMARY KEY, city text NOT NULL, v text);
CREATE TABLE measurement_y2024 (note text) INHERITS (measurement);
CREATE TABLE measurement_y2025 () INHERITS (measurement);
INSERT INTO measurement VALUES (1, 'a', 'parent 1'), (2, 'b', 'parent 2');
INSERT INTO measurement_y2024 VALUES (1, 'a', 'child 1', 'shares key 1'), (3, 'a', 'child 3', NULL);
INSERT INTO measurement_y2025 VALUES (2, 'b', 'child 2');
CREATE TABLE city (name text PRIMARY KEY);
INSERT INTO city VALUES ('a'), ('b');
CREATE TABLE region_reading (id int, region int, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE region_reading_1 PARTITION OF region_reading FOR VALUES IN (1);
CREATE TABLE region_reading_2 PARTITION OF region_reading FOR VALUES IN (2);
INSERT INTO region_reading VALUES (1, 1, 'r1'), (1, 2, 'r2'), (2, 2, 'r3');
ANALYZE;`)
	mapping := writeMapping(t, `version: 1
collections:
  - name: measurements
    table: measurement
    fields: [v]
  - name: cities
    table: city
    fields:
      - name: values
        embed: {table: measurement, join: {city: name}, orderBy: id, fields: [id, v]}
      - name: ids
        ids: {table: measurement, join: {city: name}}
      - name: count
        aggregate: {fn: count, table: measurement, join: {city: name}}
  - name: readings
    table: region_reading
    fields: [v]
`)
	code, out, errs := runCLI(t, "validate", "-m", mapping, "--source", src)
	if code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"m.yaml:4:12: warning: reads only public.measurement's own rows; its inheritance children public.measurement_y2024 (~2 rows), public.measurement_y2025 (~1 rows) are not read; map a child as its own collection, or a view that unions them",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("validate does not warn %q:\n%s", want, errs)
		}
	}
	if strings.Count(errs, "inheritance") != 1 {
		t.Errorf("validate warns about the parent more than once:\n%s", errs)
	}
	code, out, errs = runCLI(t, "plan", "-m", mapping, "--source", src)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"  public.measurement (own rows only, not its 2 inheritance children)\n",
		"values <- public.measurement (embed, own rows only, not its 2 inheritance children)",
		"  public.region_reading (all partitions)\n",
		"WARNING [inheritance] measurements: reads only public.measurement's own rows",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not show %q:\n%s", want, out)
		}
	}
	for _, tg := range sourceTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			if code, out, errs := runCLI(t, "migrate", "-q", "-m", mapping, "--source", src, "--target", tg.uri, "--batch-size", "1"); code != 0 {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
			}
			wantDocs(t, "measurements", tg.docs("measurements"), `{"_id":1,"v":"parent 1"}`, `{"_id":2,"v":"parent 2"}`)
			wantDocs(t, "cities", tg.docs("cities"),
				`{"_id":"a","values":[{"id":1,"v":"parent 1"}],"ids":[1],"count":1}`,
				`{"_id":"b","values":[{"id":2,"v":"parent 2"}],"ids":[2],"count":1}`)
			if got := tg.docs("readings"); len(got) != 3 {
				t.Errorf("readings of the partitioned table: %v, want 3", got)
			}
			if code, out, errs := runCLI(t, "verify", "-m", mapping, "--source", src, "--target", tg.uri); code != 0 {
				t.Errorf("verify: exit %d\n%s%s", code, out, errs)
			}
		})
	}
}

// TestRowSecurityRefusedOrAcknowledged: a role that row-level security
// shows 2 of 4 rows is refused (exit 2, nothing written) by validate,
// plan, migrate and verify, naming the table and its policy, wherever the
// mapping reads the table (here a lookup too); with --row-security the
// run reads the 2 rows and says so on stderr, in the summary file and in
// verify's and plan's reports. PostgreSQL's own refusal (a view whose
// owner the policy applies to) is put in the same words.
func TestRowSecurityRefusedOrAcknowledged(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE TABLE account (id int PRIMARY KEY, owner text NOT NULL, name text);
CREATE TABLE note (id int PRIMARY KEY, account_id int NOT NULL, body text);
INSERT INTO note VALUES (1, 1, 'first'), (2, 2, 'second');`)
	reader := testenv.ReaderRole(t, src, "", "rls-pw")
	u, err := url.Parse(reader)
	if err != nil {
		t.Fatal(err)
	}
	role := u.User.Username()
	testenv.Exec(t, src, `
INSERT INTO account VALUES (1, '`+role+`', 'mine 1'), (2, 'someone', 'theirs 2'), (3, '`+role+`', 'mine 3'), (4, 'someone', 'theirs 4');
ALTER TABLE account ENABLE ROW LEVEL SECURITY;
CREATE POLICY mine ON account FOR SELECT USING (owner = current_user);
CREATE VIEW my_account AS SELECT id, name FROM account;
ALTER VIEW my_account OWNER TO "`+role+`";`)
	mapping := writeMapping(t, `version: 1
collections:
  - name: accounts
    table: account
    fields: [name]
  - name: notes
    table: note
    lookups:
      - {name: a, table: account, join: {id: account_id}}
    fields: [body, {name: accountName, column: a.name}]
`)
	dir := t.TempDir()
	target := filepath.Join(dir, "out")
	policy := `public.account (policy mine (USING (owner = CURRENT_USER)))`
	for _, args := range [][]string{
		{"validate"}, {"plan"}, {"migrate", "--target", target}, {"verify", "--target", target},
	} {
		code, out, errs := runCLI(t, append(args, "-m", mapping, "--source", reader)...)
		if code != exitUsage {
			t.Errorf("%s without --row-security: exit %d, want %d\n%s%s", args[0], code, exitUsage, out, errs)
		}
		for _, want := range []string{"row-level security would hide rows from the source role", policy, "--row-security"} {
			if !strings.Contains(errs, want) {
				t.Errorf("%s does not say %q:\n%s", args[0], want, errs)
			}
		}
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("the refused migrate wrote into %s", target)
	}

	summary := filepath.Join(dir, "summary.json")
	code, out, errs := runCLI(t, "migrate", "-q", "-m", mapping, "--source", reader, "--target", target, "--row-security", "--summary-file", summary)
	if code != 0 {
		t.Fatalf("migrate --row-security: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "row-level security filters what is read: "+policy) {
		t.Errorf("migrate --row-security does not say what was filtered:\n%s", errs)
	}
	wantDocs(t, "accounts", testenv.ReadLines(t, filepath.Join(target, "accounts.jsonl")), `{"_id":1,"name":"mine 1"}`, `{"_id":3,"name":"mine 3"}`)
	wantDocs(t, "notes", testenv.ReadLines(t, filepath.Join(target, "notes.jsonl")), `{"_id":1,"body":"first","accountName":"mine 1"}`, `{"_id":2,"body":"second"}`)
	var sum struct {
		RowSecurity []struct {
			Table    string
			Policies []string
		}
	}
	if b, err := os.ReadFile(summary); err != nil || json.Unmarshal(b, &sum) != nil || len(sum.RowSecurity) != 1 ||
		sum.RowSecurity[0].Table != "public.account" || !slices.Equal(sum.RowSecurity[0].Policies, []string{"mine (USING (owner = CURRENT_USER))"}) {
		t.Errorf("summary file: %+v (%v)\n%s", sum, err, b)
	}

	report := filepath.Join(dir, "verify.json")
	code, out, errs = runCLI(t, "verify", "-m", mapping, "--source", reader, "--target", target, "--row-security", "--report", report)
	if code != 0 || !strings.Contains(out, "result: identical") || !strings.Contains(out, "row-level security filtered what was read") {
		t.Errorf("verify --row-security: exit %d\n%s%s", code, out, errs)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), `"rowSecurity":[{"table":"public.account","policies":["mine (USING (owner = CURRENT_USER))"]}]`) {
		t.Errorf("verify's report does not list the filtered table (%v):\n%s", err, b)
	}
	code, out, errs = runCLI(t, "plan", "-m", mapping, "--source", reader, "--row-security", "--format", "json")
	if code != 0 || !strings.Contains(out, `"rule": "row-security"`) || !strings.Contains(out, `"rowSecurity": [`) {
		t.Errorf("plan --row-security: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "validate", "-m", mapping, "--source", reader, "--row-security"); code != 0 {
		t.Errorf("validate --row-security: exit %d\n%s%s", code, out, errs)
	}
	// The table's owner (here the superuser) reads every row: nothing to
	// acknowledge.
	code, out, errs = runCLI(t, "migrate", "-q", "-m", mapping, "--source", src, "--target", filepath.Join(dir, "all"))
	if code != 0 || strings.Contains(errs, "row-level security") {
		t.Errorf("migrate as the owner: exit %d\n%s%s", code, out, errs)
	}
	if n := len(testenv.ReadLines(t, filepath.Join(dir, "all", "accounts.jsonl"))); n != 4 {
		t.Errorf("the owner's migration wrote %d accounts, want 4", n)
	}

	// A view runs as its owner, whom the policy filters: the catalog shows
	// no row security on the view, PostgreSQL refuses the read.
	view := writeMapping(t, "version: 1\ncollections:\n  - name: mine\n    table: my_account\n    id: id\n")
	code, out, errs = runCLI(t, "validate", "-m", view, "--source", reader)
	if code != exitUsage || !strings.Contains(errs, `m.yaml:3:5: mine: row-level security would hide rows of table "account", which the query for table "my_account" reads, from the source role`) {
		t.Errorf("validate of a view over a filtered table: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "migrate", "-q", "-m", view, "--source", reader, "--target", filepath.Join(dir, "view"))
	if code != exitUsage || !strings.Contains(errs, `row-level security would hide rows of table "account" from the source role`) || !strings.Contains(errs, "--row-security") {
		t.Errorf("migrate of a view over a filtered table: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "migrate", "-q", "-m", view, "--source", reader, "--target", filepath.Join(dir, "view"), "--row-security")
	if code != 0 || len(testenv.ReadLines(t, filepath.Join(dir, "view", "mine.jsonl"))) != 2 {
		t.Errorf("migrate --row-security of the view: exit %d\n%s%s", code, out, errs)
	}
}

// TestTableNamesResolveAsPostgres: table names are read with SQL's
// quoting and folding, and an unqualified name goes through the role's
// search_path (app before public here), in collections, lookups and
// links alike; plan shows the resolved names; a name other schemas of the
// path also hold is warned about; a three-part name is refused.
func TestTableNamesResolveAsPostgres(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, `
CREATE SCHEMA app;
CREATE SCHEMA "x.y";
CREATE SCHEMA x;
CREATE SCHEMA "Sales Dept";
CREATE TABLE public.item (id int PRIMARY KEY, src text);
CREATE TABLE app.item (id int PRIMARY KEY, src text);
INSERT INTO public.item VALUES (1, 'public.item');
INSERT INTO app.item VALUES (1, 'app.item'), (2, 'app.item');
CREATE TABLE "x.y".z (id int PRIMARY KEY, src text);
CREATE TABLE x."y.z" (id int PRIMARY KEY, src text);
INSERT INTO "x.y".z VALUES (1, '"x.y".z');
INSERT INTO x."y.z" VALUES (1, 'x."y.z"');
CREATE TABLE "Mixed Case" (id int PRIMARY KEY, item_id int, src text);
INSERT INTO "Mixed Case" VALUES (1, 2, 'Mixed Case');
CREATE TABLE "Sales Dept"."Tag" (id int PRIMARY KEY, label text);
CREATE TABLE "Sales Dept".item_tag (item_id int REFERENCES app.item, tag_id int REFERENCES "Sales Dept"."Tag", PRIMARY KEY (item_id, tag_id));
INSERT INTO "Sales Dept"."Tag" VALUES (7, 'seven'), (8, 'eight');
INSERT INTO "Sales Dept".item_tag VALUES (1, 7), (1, 8), (2, 8);`)
	reader := testenv.ReaderRole(t, src, "", "names-pw")
	u, err := url.Parse(reader)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Exec(t, src, `
GRANT USAGE ON SCHEMA app, "x.y", x, "Sales Dept" TO "`+u.User.Username()+`";
GRANT SELECT ON ALL TABLES IN SCHEMA app, "x.y", x, "Sales Dept" TO "`+u.User.Username()+`";
ALTER ROLE "`+u.User.Username()+`" SET search_path = app, public;`)
	mapping := writeMapping(t, `version: 1
collections:
  - name: items
    table: item
  - name: publicItems
    table: public.item
  - name: dotted1
    table: '"x.y".z'
  - name: dotted2
    table: x."y.z"
  - name: mixed
    table: '"Mixed Case"'
    lookups:
      - {name: it, table: ITEM, join: {id: item_id}}
    fields: [src, {name: itemSrc, column: it.src}]
  - name: tags
    table: '"Sales Dept"."Tag"'
links:
  - table: '"Sales Dept".Item_Tag'
    sides: [{collection: items, field: tags}, {collection: tags, field: items}]
`)
	code, out, errs := runCLI(t, "validate", "-m", mapping, "--source", reader)
	if code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out, errs)
	}
	warning := `m.yaml:4:12: warning: table "item" resolves to app.item, the first on the role's search_path (pg_catalog, app, public); public.item exists too; qualify the name (schema.table) to say which one is meant whatever the search_path`
	if !strings.Contains(errs, warning) || strings.Count(errs, "warning:") != 2 {
		t.Errorf("validate warns (want the names item and ITEM, once each):\n%s", errs)
	}
	code, out, errs = runCLI(t, "plan", "-m", mapping, "--source", reader)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"== items (documents from app.item)", "== publicItems (documents from public.item)",
		`== dotted1 (documents from "x.y".z)`, `== dotted2 (documents from x."y.z")`,
		`== mixed (documents from public."Mixed Case")`, "it <- app.item (lookup, object)",
		`tags <- "Sales Dept".item_tag (ids)`, `== tags (documents from "Sales Dept"."Tag")`,
		"WARNING [search-path] items:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan does not show %q:\n%s", want, out)
		}
	}
	target := filepath.Join(t.TempDir(), "out")
	if code, out, errs := runCLI(t, "migrate", "-q", "-m", mapping, "--source", reader, "--target", target); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	read := func(coll string) []string { return testenv.ReadLines(t, filepath.Join(target, coll+".jsonl")) }
	wantDocs(t, "items", read("items"), `{"_id":1,"src":"app.item","tags":[7,8]}`, `{"_id":2,"src":"app.item","tags":[8]}`)
	wantDocs(t, "publicItems", read("publicItems"), `{"_id":1,"src":"public.item"}`)
	wantDocs(t, "dotted1", read("dotted1"), `{"_id":1,"src":"\"x.y\".z"}`)
	wantDocs(t, "dotted2", read("dotted2"), `{"_id":1,"src":"x.\"y.z\""}`)
	wantDocs(t, "mixed", read("mixed"), `{"_id":1,"src":"Mixed Case","itemSrc":"app.item"}`)
	wantDocs(t, "tags", read("tags"), `{"_id":7,"label":"seven","items":[1]}`, `{"_id":8,"label":"eight","items":[1,2]}`)

	// As the superuser, whose search_path is the default, item is
	// public's, which the link table does not reference.
	code, out, errs = runCLI(t, "validate", "-m", mapping, "--source", src)
	if code != exitUsage || !strings.Contains(errs, `no foreign key of "Sales Dept".item_tag references public.item`) {
		t.Errorf("validate as another role: exit %d\n%s%s", code, out, errs)
	}

	three := writeMapping(t, "version: 1\ncollections:\n  - name: z\n    table: x.y.z\n")
	for _, args := range [][]string{{"validate", "-m", three}, {"validate", "-m", three, "--source", reader}, {"migrate", "-m", three, "--source", reader, "--target", target}} {
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, `m.yaml:4:12: z: table "x.y.z": 3-part name`) {
			t.Errorf("%s of a three-part name: exit %d\n%s%s", args[0], code, out, errs)
		}
	}
}

// tieRows are rows whose order the mappings below leave tied: tags have
// no primary key and several share post and rank (two of them differ
// only in how numeric 1.0 and 1.00 print); readings, also without a key,
// are doubles whose floating point sum depends on the order they are added
// in (denorm's is exact: 1e16 - 1e16 + 1 is 1 in any order).
const tieRows = `
CREATE TABLE post (id int PRIMARY KEY, title text);
INSERT INTO post VALUES (1, 'one'), (2, 'two');
CREATE TABLE tag (post_id int NOT NULL, rank int NOT NULL, label text, weight numeric);
INSERT INTO tag VALUES (1, 1, 'b', 1.0), (1, 1, 'a', 1.00), (1, 2, 'c', 2), (1, 1, 'a', 1.0), (2, 5, 'z', 1), (2, 5, 'y', 1);
CREATE TABLE reading (post_id int NOT NULL, x float8 NOT NULL);
INSERT INTO reading VALUES (1, 1e16), (1, -1e16), (1, 1), (2, 1e16), (2, -1e16), (2, 1);
CREATE VIEW tag_view AS SELECT * FROM tag;`

const tieMapping = `version: 1
numeric: string
collections:
  - name: posts
    table: post
    lookups:
      - {name: best, table: tag, join: {post_id: id}, orderBy: rank}
    fields:
      - title
      - {name: bestLabel, column: best.label}
      - name: topTag
        embed: {table: tag, join: {post_id: id}, orderBy: rank, as: object, fields: [label, weight]}
      - name: firstTwo
        embed: {table: tag, join: {post_id: id}, orderBy: rank, limit: 2, fields: [label, weight]}
      - name: tags
        embed: {table: tag_view, join: {post_id: id}, orderBy: rank, fields: [label, weight]}
      - name: labels
        ids: {table: tag, join: {post_id: id}, column: label, orderBy: rank}
      - name: total
        aggregate: {fn: sum, table: reading, join: {post_id: id}, column: x}
`

// TestTiesDoNotDependOnRowOrder: rows the mapping's order leaves tied in a
// table without a primary key (and a view over it) are ordered by every
// column's text in the "C" collation, so a no-op UPDATE, which moves rows
// within the table, changes no document: not which rows a limit, an
// object embed or a lookup picks, not an array's order, not a sum of
// doubles.
func TestTiesDoNotDependOnRowOrder(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, tieRows)
	mapping := writeMapping(t, tieMapping)
	want := []string{
		`{"_id":1,"title":"one","bestLabel":"a","topTag":{"label":"a","weight":"1.0"},"firstTwo":[{"label":"a","weight":"1.0"},{"label":"a","weight":"1.00"}],` +
			`"tags":[{"label":"a","weight":"1.0"},{"label":"a","weight":"1.00"},{"label":"b","weight":"1.0"},{"label":"c","weight":"2"}],"labels":["a","a","b","c"],"total":1.0}`,
		`{"_id":2,"title":"two","bestLabel":"y","topTag":{"label":"y","weight":"1"},"firstTwo":[{"label":"y","weight":"1"},{"label":"z","weight":"1"}],` +
			`"tags":[{"label":"y","weight":"1"},{"label":"z","weight":"1"}],"labels":["y","z"],"total":1.0}`,
	}
	for round, change := range []string{"", "UPDATE tag SET rank = rank WHERE label IN ('b', 'z'); UPDATE reading SET x = x WHERE x = 1e16;", "UPDATE tag SET rank = rank WHERE label = 'a';"} {
		if change != "" {
			testenv.Exec(t, src, change)
		}
		target := filepath.Join(t.TempDir(), "out")
		if code, out, errs := runCLI(t, "migrate", "-q", "-m", mapping, "--source", src, "--target", target); code != 0 {
			t.Fatalf("round %d: migrate: exit %d\n%s%s", round, code, out, errs)
		}
		wantDocs(t, "posts", testenv.ReadLines(t, filepath.Join(target, "posts.jsonl")), want...)
	}
}

// infinityRows have timestamp, date and timestamptz primary keys holding
// ±infinity, relations joined on such keys, and a bucket collection whose
// parents are such keys.
const infinityRows = `
CREATE TABLE reading (at timestamp PRIMARY KEY, v int);
INSERT INTO reading VALUES ('-infinity', 1), ('2024-01-01 10:00', 2), ('2024-01-02 10:00', 3), ('infinity', 4), ('2024-01-03 10:00', 5);
CREATE TABLE reading_note (id int PRIMARY KEY, at timestamp NOT NULL, note text);
INSERT INTO reading_note VALUES (1, '-infinity', 'before'), (2, '2024-01-01 10:00', 'first'), (3, 'infinity', 'after'), (4, '2024-01-02 10:00', 'second');
CREATE TABLE day (d date PRIMARY KEY, v int);
INSERT INTO day VALUES ('-infinity', 1), ('2024-01-01', 2), ('infinity', 3), ('2024-01-03', 4);
CREATE TABLE stamp (t timestamptz PRIMARY KEY, v int);
INSERT INTO stamp VALUES ('infinity', 1), ('2024-01-01 10:00+02', 2), ('-infinity', 3);
CREATE TABLE sample (id int PRIMARY KEY, at timestamp NOT NULL, v int);
INSERT INTO sample VALUES (1, '-infinity', 1), (2, '2024-01-01 10:00', 2), (3, '2024-01-01 10:00', 3), (4, 'infinity', 4), (5, '2024-01-01 10:00', 5);`

const infinityMapping = `version: 1
collections:
  - name: readings
    table: reading
    fields:
      - v
      - name: notes
        embed: {table: reading_note, join: {at: at}, orderBy: id, fields: [id, note]}
  - name: days
    table: day
  - name: stamps
    table: stamp
  - name: samples
    table: sample
    bucket: {by: at, size: 2, orderBy: id}
    fields: [id, v]
`

// TestInfinityKeysRejected: a ±infinity timestamp, date or timestamptz
// key rejects its row (exit 3, the reject file naming the row and the
// reason) and the rest is written, on a directory and a server, read a
// row a batch so that keyset pages start after an infinite key; a job
// killed after such a position resumes from it to the same documents.
func TestInfinityKeysRejected(t *testing.T) {
	src := testenv.PostgresDB(t)
	testenv.Exec(t, src, infinityRows)
	mapping := writeMapping(t, infinityMapping)
	wantReadings := []string{
		`{"_id":{"$date":"2024-01-01T10:00:00Z"},"v":2,"notes":[{"id":2,"note":"first"}]}`,
		`{"_id":{"$date":"2024-01-02T10:00:00Z"},"v":3,"notes":[{"id":4,"note":"second"}]}`,
		`{"_id":{"$date":"2024-01-03T10:00:00Z"},"v":5,"notes":[]}`,
	}
	wantRejects := map[string]string{
		"reading (at)=(-infinity)":       "_id: column \"at\": timestamp without time zone value -infinity cannot be written",
		"reading (at)=(infinity)":        "_id: column \"at\": timestamp without time zone value infinity cannot be written",
		"day (d)=(-infinity)":            "date value -infinity cannot be written",
		"day (d)=(infinity)":             "date value infinity cannot be written",
		"stamp (t)=(-infinity)":          "timestamp with time zone value -infinity cannot be written",
		"stamp (t)=(infinity)":           "timestamp with time zone value infinity cannot be written",
		"sample (at, id)=(-infinity, 1)": "bucket parent key at: column \"at\": timestamp without time zone value -infinity",
		"sample (at, id)=(infinity, 4)":  "bucket parent key at: column \"at\": timestamp without time zone value infinity",
	}
	for _, tg := range sourceTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			rejects := filepath.Join(t.TempDir(), "rejects.jsonl")
			code, out, errs := runCLI(t, "migrate", "-q", "-m", mapping, "--source", src, "--target", tg.uri, "--batch-size", "1", "--rejects", rejects)
			if code != exitRejected {
				t.Fatalf("migrate: exit %d, want %d\n%s%s", code, exitRejected, out, errs)
			}
			got := map[string]string{}
			for _, r := range readRejects(t, rejects) {
				got[r.Source] = r.Error
			}
			for source, msg := range wantRejects {
				if !strings.Contains(got[source], msg) {
					t.Errorf("%s: rejected with %q, want %q", source, got[source], msg)
				}
			}
			if len(got) != len(wantRejects) {
				t.Errorf("rejected %v", got)
			}
			wantDocs(t, "readings", tg.docs("readings"), wantReadings...)
			wantDocs(t, "days", tg.docs("days"), `{"_id":{"$date":"2024-01-01T00:00:00Z"},"v":2}`, `{"_id":{"$date":"2024-01-03T00:00:00Z"},"v":4}`)
			wantDocs(t, "stamps", tg.docs("stamps"), `{"_id":{"$date":"2024-01-01T08:00:00Z"},"v":2}`)
			if pages := tg.docs("samples"); len(pages) != 2 || !strings.Contains(pages[0], `"items":[{"id":2,"v":2},{"id":3,"v":3}]`) || !strings.Contains(pages[1], `"items":[{"id":5,"v":5}]`) {
				t.Errorf("samples: %v", pages)
			}
		})
	}

	// A job killed once its checkpoint stands past -infinity resumes from
	// that position (given back to PostgreSQL as 'infinity' text).
	bin := denormBinary(t)
	target := filepath.Join(t.TempDir(), "job")
	args := []string{"migrate", "-q", "--progress", "none", "-m", mapping, "--source", src, "--target", target, "--batch-size", "1", "--job", "inf", "--collections", "readings"}
	p := startGated(t, bin, args...)
	pastInfinity := func(c *job.Record) bool {
		for _, s := range c.Streams {
			if s.Collection == "readings" && len(s.After) == 1 && s.After[0] != nil && *s.After[0] == "-infinity" {
				return true
			}
		}
		return false
	}
	held, stored := p.until(func(c, prev *job.Record) bool { return prev != nil && pastInfinity(prev) }, nil)
	if held == nil || stored == nil || !pastInfinity(stored) {
		t.Fatalf("no checkpoint past -infinity was saved (held %+v, stored %+v)\n%s", held, stored, p.output())
	}
	p.signal(os.Kill)
	p.wait()
	if c := loadCheckpoint(t, target, "inf"); c == nil || !pastInfinity(c) {
		t.Fatalf("the target holds checkpoint %+v, want the one past -infinity", c)
	}
	code, out, errs := runCLI(t, append(args[:len(args):len(args)], "--resume")...)
	if code != exitRejected {
		t.Fatalf("resume: exit %d, want %d (the infinity row after the resume point)\n%s%s", code, exitRejected, out, errs)
	}
	wantDocs(t, "resumed readings", testenv.ReadLines(t, filepath.Join(target, "readings.jsonl")), wantReadings...)
	c := loadCheckpoint(t, target, "inf")
	if c == nil || len(c.Streams) != 1 || !c.Streams[0].Done || c.Streams[0].Failed != 2 || c.Streams[0].Written != 3 {
		t.Errorf("the resumed job's totals: %+v", c)
	}
}
