package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// joinCase is a pair of key columns whose values PostgreSQL calls equal
// while they differ in bytes or type. parents are the values of p.k (a
// unique key, so distinct to PostgreSQL), children those of c.k.
type joinCase struct {
	name                  string
	parentType, childType string
	parents, children     []string
}

var joinCases = []joinCase{
	{"char_varchar", "char(5)", "varchar", []string{"'a'", "'b c'", "'x-1'"}, []string{"'a'", "'a  '", "'b c'", "'b c '", "'A'", "'x-1 '", "'x-1'"}},
	{"char_text", "char(5)", "text", []string{"'a'", "'b c'"}, []string{"'a'", "'a  '", "'b c'", "'b c '", "''"}},
	{"char_char", "char(3)", "char(6)", []string{"'ab'", "'c'"}, []string{"'ab'", "'ab    '", "'c  '", "'C'"}},
	{"text_char", "text", "char(4)", []string{"'ab'", "'ab '", "'c'"}, []string{"'ab'", "'ab  '", "'c'"}},
	{"citext", "citext", "citext", []string{"'Ab'", "'straße'"}, []string{"'aB'", "'AB'", "'ab'", "'STRASSE'", "'Straße'", "'x'"}},
	{"citext_text", "citext", "text", []string{"'Ab'"}, []string{"'aB'", "'Ab'"}},
	{"numeric", "numeric", "numeric", []string{"1", "2.5", "-3"}, []string{"1.0", "1.00", "1", "2.50", "2.5", "2.51", "-3.000"}},
	{"numeric_scale", "numeric(6,2)", "numeric(9,4)", []string{"1", "2.5"}, []string{"1.0000", "2.5", "2.5001"}},
	{"int_numeric", "int", "numeric", []string{"1", "2"}, []string{"1.0", "2.00", "1.5", "2"}},
	{"numeric_int", "numeric", "bigint", []string{"1.00", "2.5"}, []string{"1", "2", "3"}},
	{"float_zero", "float8", "float8", []string{"0", "1.5"}, []string{"'-0'", "0", "1.5", "1.50"}},
	{"real_double", "real", "float8", []string{"0.1", "1"}, []string{"0.1", "0.10000000149011612", "1"}},
	{"numeric_double", "numeric", "float8", []string{"0.5", "0.1"}, []string{"0.5", "0.1", "0.25"}},
	{"int_double", "int", "float8", []string{"1", "2"}, []string{"1.0", "1.5", "'-0'"}},
	{"smallint_bigint", "bigint", "smallint", []string{"1", "70000"}, []string{"1", "2"}},
	{"date_timestamp", "date", "timestamp", []string{"'2024-01-01'", "'2024-01-02'"}, []string{"'2024-01-01 00:00'", "'2024-01-01 00:00:01'", "'2024-01-02'"}},
	{"timestamptz", "timestamptz", "timestamptz", []string{"'2024-01-01 00:00+00'"}, []string{"'2024-01-01 01:00+01'", "'2024-01-01 00:00:00.000001+00'"}},
	{"icu_text", "text COLLATE \"en-x-icu\"", "text", []string{"'a'", "'B'", "'c'", "'É'", "'e'", "'Z'"}, []string{"'B'", "'b'", "'e'", "'É'", "'Z'", "'a'", "'c'"}},
}

// setupJoinCases creates, for each case, p_<name>(id, k) with k unique
// and c_<name>(cid, k), and a mapping with two collections per case: the
// parents keyed by k, embedding their children (also counted, summed and
// listed as ids), and the children with their parent as a lookup.
func setupJoinCases(t *testing.T, charMode string) (db, file string) {
	t.Helper()
	var sql strings.Builder
	sql.WriteString("CREATE EXTENSION IF NOT EXISTS citext;\n")
	var m strings.Builder
	m.WriteString("version: 1\n")
	if charMode != "" {
		m.WriteString("char: " + charMode + "\n")
	}
	m.WriteString("collections:\n")
	for _, c := range joinCases {
		fmt.Fprintf(&sql, "CREATE TABLE p_%s (id int PRIMARY KEY, k %s NOT NULL UNIQUE);\n", c.name, c.parentType)
		fmt.Fprintf(&sql, "CREATE TABLE c_%s (cid int PRIMARY KEY, k %s);\n", c.name, c.childType)
		for i, v := range c.parents {
			fmt.Fprintf(&sql, "INSERT INTO p_%s VALUES (%d, %s);\n", c.name, i+1, v)
		}
		for i, v := range append(slices.Clone(c.children), "NULL") {
			fmt.Fprintf(&sql, "INSERT INTO c_%s VALUES (%d, %s);\n", c.name, 10+i, v)
		}
		fmt.Fprintf(&m, `  - name: p_%[1]s
    table: p_%[1]s
    id: k
    fields:
      - {name: pid, column: id}
      - name: items
        embed: {table: c_%[1]s, join: {k: k}, orderBy: cid, fields: [cid, k]}
      - name: n
        aggregate: {fn: count, table: c_%[1]s, join: {k: k}}
      - name: total
        aggregate: {fn: sum, table: c_%[1]s, join: {k: k}, column: cid}
      - name: cids
        ids: {table: c_%[1]s, join: {k: k}, column: cid}
  - name: c_%[1]s
    table: c_%[1]s
    lookups:
      - {name: parent, table: p_%[1]s, join: {k: k}}
    fields:
      - k
      - {name: pid, column: parent.id}
`, c.name)
	}
	db = testenv.PostgresDB(t)
	testenv.Exec(t, db, sql.String())
	file = filepath.Join(t.TempDir(), "joins.yaml")
	if err := os.WriteFile(file, []byte(m.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return db, file
}

// joinTruth is what PostgreSQL's own join gives for a case: per parent id
// the ids of its children, per child id its parent's id (0: none).
type joinTruth struct {
	children map[int32][]int32
	parent   map[int32]int32
}

func joinOracle(t *testing.T, ctx context.Context, conn *pgx.Conn, name string) joinTruth {
	t.Helper()
	o := joinTruth{children: map[int32][]int32{}, parent: map[int32]int32{}}
	rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT p.id, coalesce(array_agg(c.cid ORDER BY c.cid) FILTER (WHERE c.cid IS NOT NULL), '{}')
		FROM p_%[1]s p LEFT JOIN c_%[1]s c ON c.k = p.k GROUP BY p.id`, name))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int32
		var kids []int32
		if err := rows.Scan(&id, &kids); err != nil {
			t.Fatal(err)
		}
		o.children[id] = kids
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = conn.Query(ctx, fmt.Sprintf(`SELECT c.cid, coalesce(p.id, 0) FROM c_%[1]s c LEFT JOIN p_%[1]s p ON p.k = c.k`, name))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var cid, pid int32
		if err := rows.Scan(&cid, &pid); err != nil {
			t.Fatal(err)
		}
		o.parent[cid] = pid
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestJoinKeysMatchPostgres: for every pair of key types whose values
// PostgreSQL calls equal while they differ in bytes or type (char(n)
// padding, citext, numeric scale, float zero, integer against numeric or
// float, date against timestamp, text under an ICU collation), the
// documents - embeds, counts, sums, id arrays and lookups - are those of
// PostgreSQL's own join, read set-wise and through merge streams, in
// batches of one and of many, with char(n) trimmed and kept.
func TestJoinKeysMatchPostgres(t *testing.T) {
	ctx := context.Background()
	for _, charMode := range []string{"", "keep"} {
		db, file := setupJoinCases(t, charMode)
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		snap, plan := snapshotPlan(t, db, file)
		for _, c := range joinCases {
			want := joinOracle(t, ctx, conn, c.name)
			matched := 0
			for _, kids := range want.children {
				matched += len(kids)
			}
			if matched == 0 {
				t.Fatalf("%s: PostgreSQL joins no rows: the case tests nothing", c.name)
			}
			for _, cp := range plan.Collections {
				if cp.Name != "p_"+c.name && cp.Name != "c_"+c.name {
					continue
				}
				if cp.Name == "p_"+c.name && !slices.Contains(extract.Streamable(cp), cp.Root.Children[0]) {
					t.Errorf("%s: the embed is not streamed", cp.Name)
				}
				for _, setWise := range []bool{true, false} {
					for _, bs := range []int{1, 100} {
						name := fmt.Sprintf("char=%s/%s/setwise=%v/batch%d", charMode, cp.Name, setWise, bs)
						t.Run(name, func(t *testing.T) {
							docs := produceDocs(t, ctx, snap, cp, ProduceOptions{BatchSize: bs, SetWise: setWise})
							checkJoinDocs(t, c, cp, docs, want, charMode)
						})
					}
				}
			}
		}
	}
}

func produceDocs(t *testing.T, ctx context.Context, snap *extract.Snapshot, cp *mappings.CollectionPlan, opt ProduceOptions) []transform.Document {
	t.Helper()
	var docs []transform.Document
	err := Produce(ctx, snap, cp, opt, func(b Built) error {
		if len(b.Rejects) > 0 {
			return fmt.Errorf("row errors: %v", b.Rejects[0].Err)
		}
		docs = append(docs, b.Docs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func checkJoinDocs(t *testing.T, c joinCase, cp *mappings.CollectionPlan, docs []transform.Document, want joinTruth, charMode string) {
	t.Helper()
	if strings.HasPrefix(cp.Name, "c_") {
		if len(docs) != len(want.parent) {
			t.Fatalf("%d documents, want %d", len(docs), len(want.parent))
		}
		for _, d := range docs {
			cid := d.ID.(int32)
			got, _ := d.Body.Get("pid")
			if want.parent[cid] == 0 {
				if got != nil {
					t.Errorf("child %d: lookup found parent %v, PostgreSQL's join none", cid, got)
				}
				continue
			}
			if got != want.parent[cid] {
				t.Errorf("child %d: lookup found parent %v, PostgreSQL's join %d", cid, got, want.parent[cid])
			}
		}
		return
	}
	if len(docs) != len(want.children) {
		t.Fatalf("%d documents, want %d", len(docs), len(want.children))
	}
	for _, d := range docs {
		pidv, _ := d.Body.Get("pid")
		pid := pidv.(int32)
		kids := want.children[pid]
		var items, ids []int32
		itemsv, _ := d.Body.Get("items")
		for _, it := range itemsv.(transform.Array) {
			cid, _ := it.(transform.Doc).Get("cid")
			items = append(items, cid.(int32))
			k, _ := it.(transform.Doc).Get("k")
			var width int
			if _, err := fmt.Sscanf(c.childType, "char(%d)", &width); err == nil {
				// Trimmed in the document by default, kept with char:
				// keep; the join ignores the padding either way.
				s := k.(string)
				if keep := charMode == "keep"; keep != (len(s) == width) || (!keep && strings.HasSuffix(s, " ")) {
					t.Errorf("parent %d: child %d has k %q (char: %q)", pid, cid, s, charMode)
				}
			}
		}
		idsv, _ := d.Body.Get("cids")
		for _, v := range idsv.(transform.Array) {
			ids = append(ids, v.(int32))
		}
		n, _ := d.Body.Get("n")
		var sum int64
		for _, k := range kids {
			sum += int64(k)
		}
		total, _ := d.Body.Get("total")
		if !slices.Equal(items, kids) || !slices.Equal(ids, kids) || n != int64(len(kids)) || total != sum {
			t.Errorf("parent %d (_id %v): items %v, ids %v, count %v, sum %v; PostgreSQL's join: %v (count %d, sum %d)",
				pid, d.ID, items, ids, n, total, kids, len(kids), sum)
		}
	}
}

// TestJoinKeysRefused: keys PostgreSQL compares by a rule denorm cannot
// follow are refused when the mapping is resolved, naming both columns
// and their types: a non-deterministic collation, interval, jsonb.
func TestJoinKeysRefused(t *testing.T) {
	db := testenv.PostgresDB(t)
	testenv.Exec(t, db, `
CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE pn (id int PRIMARY KEY, k text COLLATE nocase UNIQUE);
CREATE TABLE cn (id int PRIMARY KEY, k text);
CREATE TABLE pi (id int PRIMARY KEY, k interval UNIQUE);
CREATE TABLE ci (id int PRIMARY KEY, k interval);
CREATE TABLE pj (id int PRIMARY KEY, k jsonb);
CREATE TABLE cj (id int PRIMARY KEY, k jsonb);`)
	file := filepath.Join(t.TempDir(), "refused.yaml")
	mapping := "version: 1\ncollections:\n"
	for _, s := range []string{"n", "i", "j"} {
		mapping += fmt.Sprintf("  - name: p%[1]s\n    table: p%[1]s\n    fields:\n      - name: kids\n        embed: {table: c%[1]s, join: {k: k}}\n", s)
	}
	if err := os.WriteFile(file, []byte(mapping), 0o644); err != nil {
		t.Fatal(err)
	}
	_, f, cat := snapshotCatalog(t, db, file)
	_, err := mappings.Resolve(f, cat)
	var ps mappings.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("resolve: %v, want problems", err)
	}
	text := err.Error()
	for _, want := range []string{
		`pn.kids: join: cn.k (text) and pn.k (text): collation "nocase" of k is non-deterministic`,
		`pi.kids: join: ci.k (interval) and pi.k (interval): joining on interval is not supported`,
		`pj.kids: join: cj.k (jsonb) and pj.k (jsonb): joining on jsonb is not supported`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("problems do not say %q:\n%s", want, text)
		}
	}
	if len(ps) != 3 {
		t.Errorf("%d problems, want 3:\n%s", len(ps), text)
	}
}

// TestProduceKeysFollowPostgresEquality: a key-set read (sync's) matches
// the keys asked as PostgreSQL's = does. Keys spelled differently but
// equal to PostgreSQL (citext case, numeric scale, char padding) are one
// key: read once, listed once, found with the row's own spelling (so its
// _id is the document's); a bucket collection's parent rows spelled in
// several ways are one parent, with one series of pages, both in a full
// read and in a key-set read.
func TestProduceKeysFollowPostgresEquality(t *testing.T) {
	db := testenv.PostgresDB(t)
	testenv.Exec(t, db, `
CREATE EXTENSION IF NOT EXISTS citext;
CREATE TABLE ck (k citext PRIMARY KEY, v int);
INSERT INTO ck VALUES ('AbC', 1), ('x', 2);
CREATE TABLE nk (k numeric PRIMARY KEY, v int);
INSERT INTO nk VALUES (1.50, 1), (2, 2);
CREATE TABLE bk (k char(4) PRIMARY KEY, v int);
INSERT INTO bk VALUES ('ab', 1);
CREATE TABLE item (id int PRIMARY KEY, parent citext NOT NULL, n int);
INSERT INTO item VALUES (1, 'aB', 1), (2, 'Ab', 2), (3, 'AB', 3), (4, 'c', 4), (5, 'ab', 5);`)
	file := filepath.Join(t.TempDir(), "keys.yaml")
	mapping := `version: 1
collections:
  - {name: ck, table: ck}
  - {name: nk, table: nk}
  - {name: bk, table: bk}
  - name: items
    table: item
    bucket: {by: parent, size: 2}
`
	if err := os.WriteFile(file, []byte(mapping), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	snap, plan := snapshotPlan(t, db, file)
	key := func(s ...string) extract.Key {
		k := make(extract.Key, len(s))
		for i := range s {
			k[i] = &s[i]
		}
		return k
	}
	cases := map[string]struct {
		keys []extract.Key
		// want lists the keys found, in the row's spelling, and missing
		// those not found.
		want, missing []string
	}{
		"ck":    {[]extract.Key{key("abc"), key("ABC"), key("AbC"), key("zz"), key("ZZ")}, []string{`("AbC")`}, []string{`("zz")`}},
		"nk":    {[]extract.Key{key("1.5"), key("1.50"), key("1.500"), key("2.0"), key("3")}, []string{`("1.50")`, `("2")`}, []string{`("3")`}},
		"bk":    {[]extract.Key{key("ab"), key("ab  "), key("AB")}, []string{`("ab")`}, []string{`("AB")`}},
		"items": {[]extract.Key{key("ab"), key("AB"), key("C"), key("d")}, []string{`("aB")`, `("c")`}, []string{`("d")`}},
	}
	for _, cp := range plan.Collections {
		c := cases[cp.Name]
		t.Run(cp.Name, func(t *testing.T) {
			full := readFull(t, ctx, snap, cp)
			if cp.Bucket != nil {
				// One parent for aB, Ab, AB and ab: pages of two items.
				if n := len(full.byParent["ab"]); n != 2 || len(full.byParent) != 2 {
					t.Fatalf("full read: parents %v, want ab (2 pages) and c", slices.Sorted(maps.Keys(full.byParent)))
				}
			}
			var found, missing []string
			err := ProduceKeys(ctx, snap, cp, c.keys, 2, func(b Built) error {
				if len(b.Rejects) > 0 {
					return b.Rejects[0].Err
				}
				for _, d := range b.Docs {
					if d.Page != nil {
						if want := full.byParent[d.Page.ParentKey]; d.Page.Page >= len(want) || bsonText(t, d.Body) != want[d.Page.Page] {
							t.Errorf("page %s-%d differs from the full read's", d.Page.ParentKey, d.Page.Page)
						}
						continue
					}
					if bsonText(t, d.Body) != full.byID[idBSON(t, d.ID)] {
						t.Errorf("document %v differs from the full read's", d.ID)
					}
				}
				for _, r := range b.Keys {
					if !r.Found {
						missing = append(missing, r.Key.String())
						continue
					}
					found = append(found, r.Key.String())
					if cp.Bucket == nil && full.byID[idBSON(t, r.ID)] == "" {
						t.Errorf("key %v: _id %v is no document's", r.Key, r.ID)
					}
					if cp.Bucket != nil && r.Pages != len(full.byParent[r.ParentKey]) {
						t.Errorf("parent %v: %d pages, the full read has %d", r.Key, r.Pages, len(full.byParent[r.ParentKey]))
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(found)
			if !slices.Equal(found, c.want) || !slices.Equal(missing, c.missing) {
				t.Errorf("found %v, missing %v; want %v and %v", found, missing, c.want, c.missing)
			}
		})
	}
}
