package churn

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/denorm/denorm/internal/testenv"
)

func seedDB(t *testing.T) string {
	t.Helper()
	return testenv.PostgresDB(t, filepath.Join(testenv.Root(t), "testdata", "examples", "seed.sql"))
}

func pagilaDB(t *testing.T) string {
	t.Helper()
	root := testenv.Root(t)
	return testenv.LoadedDB(t, filepath.Join(root, "testdata", "pagila", "pagila-schema.sql"), filepath.Join(root, "testdata", "pagila", "pagila-data.sql"))
}

func newGen(t *testing.T, db string, opt Options) *Generator {
	t.Helper()
	g, err := New(context.Background(), db, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g
}

// TestCatalogPagila: the generator's own catalog sees what Pagila has.
func TestCatalogPagila(t *testing.T) {
	g := newGen(t, pagilaDB(t), Options{Seed: 1})
	pay := g.cat.table("payment")
	if pay == nil || !pay.partitioned {
		t.Fatalf("payment: %+v, want the partitioned table", pay)
	}
	if g.cat.table("payment_p2022_01") != nil {
		t.Error("partitions are tables of their own; writes must go through payment")
	}
	if pay.partKey == nil || pay.partKey.name != "payment_date" || len(pay.bounds) != 7 {
		t.Fatalf("payment partition key %v, %d bounds", pay.partKey, len(pay.bounds))
	}
	if b := pay.bounds[0]; b.from != "2022-01-01 00:00:00+00" || b.to != "2022-02-01 00:00:00+00" {
		t.Errorf("first bound %+v", b)
	}
	info, _ := g.Table("payment")
	if d := cmp.Diff([]string{"public.customer", "public.rental", "public.staff"}, info.Parents); d != "" {
		t.Errorf("payment's parents, from the foreign keys of its partitions (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"payment_date", "payment_id"}, colNames(pay.pk)); d != "" {
		t.Errorf("payment key (-want +got):\n%s", d)
	}
	film := g.cat.table("film")
	checks := []struct {
		col  string
		kind kind
		test func(c *column) bool
	}{
		{"film_id", kInt, func(c *column) bool { return c.serial && c.pk }},
		{"release_year", kInt, func(c *column) bool { return c.domain }},
		{"rating", kEnum, func(c *column) bool { return slices.Equal(c.labels, []string{"G", "PG", "PG-13", "R", "NC-17"}) }},
		{"special_features", kArray, func(c *column) bool { return c.elem.kind == kText }},
		{"fulltext", kTSVector, func(c *column) bool { return c.notNull }},
		{"rental_rate", kNumeric, func(c *column) bool { return c.prec == 4 && c.scale == 2 }},
		{"last_update", kTimestamptz, func(c *column) bool { return c.volatileDefault }},
		{"language_id", kInt, func(c *column) bool { return c.fk }},
	}
	for _, c := range checks {
		col := film.column(c.col)
		if col == nil || col.kind != c.kind || !c.test(col) {
			t.Errorf("film.%s: %+v", c.col, col)
		}
	}
	if col := g.cat.table("staff").column("picture"); col == nil || col.kind != kBytea {
		t.Errorf("staff.picture: %+v", col)
	}
	if col := g.cat.table("language").column("name"); col == nil || col.maxLen != 20 {
		t.Errorf("language.name: %+v", col)
	}
	if col := g.cat.table("store").column("manager_staff_id"); col == nil || !col.unique {
		t.Errorf("store.manager_staff_id (a unique index): %+v", col)
	}
	for _, name := range []string{"language", "category"} {
		if info, _ := g.Table(name); !info.Lookup {
			t.Errorf("%s is not seen as a lookup", name)
		}
	}
}

func colNames(cols []*column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

// TestRoundsPagila: rounds on Pagila write every table (the partitioned
// payment included: dates within its partitions' bounds), move rows,
// delete parents with their children, and truncate once.
func TestRoundsPagila(t *testing.T) {
	db := pagilaDB(t)
	g := newGen(t, db, Options{Seed: 7, Focus: []string{"film_actor", "film_category", "payment", "rental", "customer"}})
	total := newReport()
	for round := 1; round <= 3; round++ {
		start := time.Now()
		rep, err := g.Round(context.Background(), round == 2)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		t.Logf("round %d in %v", round, time.Since(start).Round(time.Millisecond))
		total.Add(rep)
	}
	t.Logf("\n%s", total)
	for _, tb := range g.tables {
		c := total.Table(tb.name)
		if c.Inserted == 0 || c.Updated == 0 {
			t.Errorf("%s: no insert or update in 3 rounds: %+v", tb.name, c)
		}
		if len(tb.fks) > 0 && c.Moved == 0 {
			t.Errorf("%s: no move in 3 rounds: %+v", tb.name, c)
		}
	}
	truncated := 0
	parents := 0
	for _, c := range total.Tables {
		truncated += c.Truncate
		parents += c.Parents
	}
	if truncated == 0 || parents == 0 {
		t.Errorf("%d truncates, %d parent deletes", truncated, parents)
	}
	if total.Table("payment").Middle == 0 {
		t.Error("no payment inserted between two siblings")
	}
}

// TestDeterministic: one seed on two loads of the same data makes the same
// statements; another seed makes others.
func TestDeterministic(t *testing.T) {
	run := func(seed uint64) []string {
		g := newGen(t, seedDB(t), Options{Seed: seed})
		var out []string
		for round := 1; round <= 3; round++ {
			if _, err := g.Round(context.Background(), round == 2); err != nil {
				t.Fatal(err)
			}
			for _, s := range g.Statements() {
				out = append(out, s.String())
			}
		}
		return out
	}
	a, b := run(42), run(42)
	if len(a) < 50 {
		t.Fatalf("only %d statements in 3 rounds", len(a))
	}
	if d := cmp.Diff(a, b); d != "" {
		t.Errorf("seed 42 twice made different statements (-first +second):\n%s", d)
	}
	if c := run(43); slices.Equal(a, c) {
		t.Error("seeds 42 and 43 made the same statements")
	}
	if !slices.ContainsFunc(a, func(s string) bool { return strings.HasPrefix(s, "TRUNCATE") }) {
		t.Error("no TRUNCATE in a round asked for one")
	}
}

// genericSchema has what Pagila and seed.sql lack: identity columns
// (always and by default), a generated column, a composite and a
// self-referencing foreign key, a domain with a check, a table without a
// primary key, and a list-partitioned table.
const genericSchema = `
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE TABLE region (code text, country char(2), name text NOT NULL, PRIMARY KEY (code, country));
CREATE TABLE shop (
  id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  code text NOT NULL, country char(2) NOT NULL,
  parent_id integer REFERENCES shop(id),
  rating posint, feel mood, tags varchar(10)[],
  price numeric(6,2) CHECK (price >= 0),
  doubled numeric GENERATED ALWAYS AS (price * 2) STORED,
  uid uuid, doc jsonb, opened date,
  FOREIGN KEY (code, country) REFERENCES region (code, country));
CREATE TABLE visit (shop_id integer NOT NULL REFERENCES shop(id), at timestamp NOT NULL, note text);
CREATE TABLE event (id bigint GENERATED BY DEFAULT AS IDENTITY, kind text NOT NULL, at date NOT NULL,
  shop_id integer REFERENCES shop(id), PRIMARY KEY (id, kind)) PARTITION BY LIST (kind);
CREATE TABLE event_a PARTITION OF event FOR VALUES IN ('open', 'close');
CREATE TABLE event_b PARTITION OF event FOR VALUES IN ('sale');
INSERT INTO region VALUES ('n', 'de', 'North'), ('s', 'de', 'South'), ('n', 'fr', 'Nord');
INSERT INTO shop (code, country, rating, feel, tags, price, uid, doc, opened)
  SELECT (ARRAY['n','s','n'])[1 + i % 3], (ARRAY['de','de','fr'])[1 + i % 3], 1 + i % 5, 'ok', '{a,b}', i * 1.5,
         gen_random_uuid(), '{"x": 1}', date '2024-01-01' + i FROM generate_series(1, 12) i;
UPDATE shop SET parent_id = id - 1 WHERE id > 1;
INSERT INTO visit SELECT 1 + i % 12, timestamp '2024-01-01' + i * interval '1 hour', 'v' || i FROM generate_series(1, 30) i;
INSERT INTO event (kind, at, shop_id) SELECT (ARRAY['open','close','sale'])[1 + i % 3], date '2024-01-01' + i, 1 + i % 12 FROM generate_series(1, 30) i;
`

// TestGenericSchema: the generator writes valid rows into every table of
// a schema it knows nothing about beforehand.
func TestGenericSchema(t *testing.T) {
	db := testenv.PostgresDB(t)
	testenv.Exec(t, db, genericSchema)
	g := newGen(t, db, Options{Seed: 3, Focus: []string{"visit", "event", "shop"}})
	shop := g.cat.table("shop")
	if c := shop.column("id"); !c.identityAlways || !c.serial {
		t.Errorf("shop.id: %+v", c)
	}
	if c := shop.column("doubled"); !c.generated {
		t.Errorf("shop.doubled: %+v", c)
	}
	if c := shop.column("rating"); !c.domain || c.kind != kInt {
		t.Errorf("shop.rating: %+v", c)
	}
	if c := shop.column("price"); !c.checked {
		t.Errorf("shop.price: %+v", c)
	}
	if ev := g.cat.table("event"); ev.partKey == nil || ev.partKey.name != "kind" || len(ev.bounds) != 2 {
		t.Errorf("event partitions: %+v", ev)
	}
	total := newReport()
	for round := 1; round <= 4; round++ {
		rep, err := g.Round(context.Background(), round == 3)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		total.Add(rep)
	}
	t.Logf("\n%s", total)
	for _, name := range []string{"region", "shop", "visit", "event"} {
		c := total.Table(name)
		if c.Inserted == 0 || c.Updated == 0 || c.Deleted+c.Truncate == 0 {
			t.Errorf("%s: %+v", name, c)
		}
	}
	for _, name := range []string{"shop", "visit", "event"} {
		if total.Table(name).Moved == 0 {
			t.Errorf("%s: no move", name)
		}
	}
	if total.Table("region").Parents == 0 && total.Table("shop").Parents == 0 {
		t.Error("no parent deleted with its children")
	}
	// Every event row sits in a partition whose list holds its kind.
	rows := testenv.QueryString(t, db, "SELECT count(*) FROM event WHERE kind NOT IN ('open', 'close', 'sale')")
	if rows != "0" {
		t.Errorf("%s events with a kind no partition lists", rows)
	}
}
