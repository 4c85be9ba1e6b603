package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/internal/testenv"
)

// dbURL is admin's URL with another database.
func dbURL(admin, name string) (string, error) {
	u, err := url.Parse(admin)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func exec1(ctx context.Context, db, sql string) error {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func dropDB(ctx context.Context, admin, name string) error {
	return exec1(ctx, admin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// reuse keeps the generated databases of an earlier run with the same
// parameters (REUSE=1): for quick iterations on denorm itself.
var reuse = os.Getenv("REUSE") != ""

// benchDB returns the URL of database name, created empty. With reuse, a
// database an earlier run completed for the same desc (kept as its
// comment) is kept as it is and reused is true.
func benchDB(ctx context.Context, admin, name, desc string) (db string, reused bool, err error) {
	db, err = dbURL(admin, name)
	if err != nil {
		return "", false, err
	}
	if reuse {
		comment, err := dbComment(ctx, admin, name)
		if err == nil && comment == benchComment+desc {
			log.Printf("  %s: reusing (%s)", name, desc)
			return db, true, nil
		}
	}
	if err := dropDB(ctx, admin, name); err != nil {
		return "", false, err
	}
	return db, false, exec1(ctx, admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// benchComment starts the comment finishDB puts on a complete database.
const benchComment = "denorm bench: "

// dbComment is database name's comment ("" for none; an error when the
// database does not exist).
func dbComment(ctx context.Context, admin, name string) (string, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var comment *string
	if err := conn.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", name).Scan(&comment); err != nil {
		return "", err
	}
	if comment == nil {
		return "", nil
	}
	return *comment, nil
}

// finishDB analyzes a generated database and marks it complete for desc.
func finishDB(ctx context.Context, admin, name, db, desc string) error {
	if err := exec1(ctx, db, "VACUUM ANALYZE"); err != nil {
		return err
	}
	return exec1(ctx, admin, fmt.Sprintf("COMMENT ON DATABASE %s IS '%s'", pgx.Identifier{name}.Sanitize(), benchComment+desc))
}

// seededDB is benchDB holding the example schema (and the seed rows).
func seededDB(ctx context.Context, admin, name, desc string) (string, bool, error) {
	db, reused, err := benchDB(ctx, admin, name, desc)
	if err != nil || reused {
		return db, reused, err
	}
	seed, err := os.ReadFile("testdata/examples/seed.sql")
	if err != nil {
		return "", false, err
	}
	return db, false, exec1(ctx, db, string(seed))
}

// personDB is a database with n generated persons (ids from 1000), two
// contact details each and an address for three persons out of two, like
// the person example's tables in production.
func personDB(ctx context.Context, admin, name string, n int) (string, error) {
	t0 := time.Now()
	desc := fmt.Sprintf("person %d", n)
	db, reused, err := seededDB(ctx, admin, name, desc)
	if err != nil || reused {
		return db, err
	}
	sql, err := os.ReadFile("bench/persons.sql")
	if err != nil {
		return "", err
	}
	err = exec1(ctx, db, fmt.Sprintf(string(sql), n))
	if err == nil {
		err = finishDB(ctx, admin, name, db, desc)
	}
	if err != nil {
		return "", fmt.Errorf("generate persons: %w", err)
	}
	log.Printf("  %s: %d persons in %.1fs", name, n, time.Since(t0).Seconds())
	return db, nil
}

// blogDB is a database with posts posts of perPost comments each.
func blogDB(ctx context.Context, admin, name string, posts, perPost int) (string, error) {
	t0 := time.Now()
	desc := fmt.Sprintf("blog %d %d", posts, perPost)
	db, reused, err := seededDB(ctx, admin, name, desc)
	if err != nil || reused {
		return db, err
	}
	err = exec1(ctx, db, fmt.Sprintf(`
INSERT INTO post (id, name, summary)
SELECT 1000 + g, 'Post ' || g, CASE WHEN g %% 5 <> 0 THEN 'Summary of post ' || g END FROM generate_series(1, %[1]d) g;
INSERT INTO comment (id, post_id, author, comment, created_at)
SELECT 1000 + g, 1000 + 1 + (g - 1) / %[2]d, 'author' || g %% 97, 'comment number ' || g,
       timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second'
FROM generate_series(1, %[1]d * %[2]d) g;
`, posts, perPost))
	if err == nil {
		err = finishDB(ctx, admin, name, db, desc)
	}
	if err != nil {
		return "", fmt.Errorf("generate blog: %w", err)
	}
	log.Printf("  %s: %d posts, %d comments in %.1fs", name, posts, posts*perPost, time.Since(t0).Seconds())
	return db, nil
}

// outputSize counts the lines and bytes of files in dir.
func outputSize(dir string, files ...string) (int64, int64, error) {
	var docs, size int64
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return 0, 0, err
		}
		docs += int64(bytes.Count(data, []byte{'\n'}))
		size += int64(len(data))
	}
	return docs, size, nil
}

// denormDir is an A run: migrate into a directory.
func denormDir(bin, mapping, db, dir string, files ...string) (Result, error) {
	if err := os.RemoveAll(dir); err != nil {
		return Result{}, err
	}
	m, err := timeCmd(bin, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", dir)
	if err != nil {
		return Result{}, err
	}
	docs, size, err := outputSize(dir, files...)
	if err != nil {
		return Result{}, err
	}
	return m.result(docs, size), nil
}

// denormFixed is a run of one document (--limit 1) into dir: what a run
// costs besides its rows.
func denormFixed(bin, mapping, db, dir string) (Result, error) {
	if err := os.RemoveAll(dir); err != nil {
		return Result{}, err
	}
	m, err := timeCmd(bin, "migrate", "-q", "--limit", "1", "--mapping", mapping, "--source", db, "--target", dir)
	if err != nil {
		return Result{}, err
	}
	return m.result(1, 0), nil
}

// denormVerify is a V run: verify a directory target that holds exactly
// what the source gives (docs documents).
func denormVerify(bin, mapping, db, dir string, docs int64) (Result, error) {
	m, err := timeCmd(bin, "verify", "--mapping", mapping, "--source", db, "--target", dir)
	if err != nil {
		return Result{}, err
	}
	if !strings.Contains(m.out, "result: identical") {
		return Result{}, fmt.Errorf("verify does not find the target identical:\n%s", m.out)
	}
	return m.result(docs, 0), nil
}

// denormOracle is an O run: verify the same directory with the
// independent oracle.
func denormOracle(bin, mapping, db, dir string, docs int64) (Result, error) {
	m, err := timeCmd(bin, "verify", "--oracle", "sql", "--mapping", mapping, "--source", db, "--target", dir)
	if err != nil {
		return Result{}, err
	}
	if !strings.Contains(m.out, "result: identical") {
		return Result{}, fmt.Errorf("verify --oracle sql does not find the target identical:\n%s", m.out)
	}
	return m.result(docs, 0), nil
}

// denormPlan is a P run: plan the mapping (docs documents), the JSON
// report into file.
func denormPlan(bin, mapping, db, file string, docs int64) (Result, error) {
	m, err := timeCmd(bin, "plan", "-q", "--mapping", mapping, "--source", db, "--format", "json", "--output", file)
	if err != nil {
		return Result{}, err
	}
	var rep struct {
		Collections []struct{ Documents int64 } `json:"collections"`
	}
	data, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil {
		return Result{}, fmt.Errorf("plan report: %w", err)
	}
	var n int64
	for _, c := range rep.Collections {
		n += c.Documents
	}
	if n != docs {
		return Result{}, fmt.Errorf("plan counts %d documents, migrate wrote %d", n, docs)
	}
	st, _ := os.Stat(file)
	return m.result(docs, st.Size()), nil
}

func mongoDB(ctx context.Context, base, name string) (*mongo.Client, *mongo.Database, string, error) {
	client, err := mongo.Connect(options.Client().ApplyURI(base))
	if err != nil {
		return nil, nil, "", err
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, nil, "", err
	}
	u.Path = "/" + name
	db := client.Database(name)
	if err := db.Drop(ctx); err != nil {
		return nil, nil, "", err
	}
	return client, db, u.String(), nil
}

// denormServer is a D run: migrate into FerretDB.
func denormServer(ctx context.Context, bin, mapping, db, base, name string) (Result, error) {
	client, target, uri, err := mongoDB(ctx, base, name)
	if err != nil {
		return Result{}, err
	}
	defer client.Disconnect(ctx)
	m, err := timeCmd(bin, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", uri)
	if err != nil {
		return Result{}, err
	}
	n, err := target.Collection("people").EstimatedDocumentCount(ctx)
	if err != nil {
		return Result{}, err
	}
	var size int64
	var stats bson.M
	if target.RunCommand(ctx, bson.D{{Key: "dbStats", Value: 1}}).Decode(&stats) == nil {
		if v, ok := stats["dataSize"].(int64); ok {
			size = v
		}
	}
	_ = target.Drop(ctx)
	return m.result(n, size), nil
}

// readDocs reads JSON Lines (relaxed Extended JSON) into BSON documents.
func readDocs(path string) ([]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var docs []any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var d bson.D
		if err := bson.UnmarshalExtJSON(sc.Bytes(), false, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		raw, err := bson.Marshal(d)
		if err != nil {
			return nil, err
		}
		docs = append(docs, bson.Raw(raw))
	}
	return docs, sc.Err()
}

// insertMany is an E run: prebuilt documents, unordered insertMany
// batches of 1000.
func insertMany(ctx context.Context, base, name string, docs []any) (Result, error) {
	client, db, _, err := mongoDB(ctx, base, name)
	if err != nil {
		return Result{}, err
	}
	defer client.Disconnect(ctx)
	coll := db.Collection("people")
	var size int64
	for _, d := range docs {
		size += int64(len(d.(bson.Raw)))
	}
	settle()
	start := time.Now()
	for i := 0; i < len(docs); i += 1000 {
		j := min(i+1000, len(docs))
		if _, err := coll.InsertMany(ctx, docs[i:j], options.InsertMany().SetOrdered(false)); err != nil {
			return Result{}, err
		}
	}
	el := time.Since(start)
	_ = db.Drop(ctx)
	return Result{Docs: int64(len(docs)), Bytes: size, Seconds: el.Seconds()}, nil
}

// copyOut streams a query's rows with COPY ... TO STDOUT into file.
func copyOut(ctx context.Context, conn *pgx.Conn, query, file string) (Result, error) {
	f, err := os.Create(file)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	settle()
	start := time.Now()
	tag, err := conn.PgConn().CopyTo(ctx, w, "COPY ("+query+") TO STDOUT")
	if err != nil {
		return Result{}, err
	}
	if err := w.Flush(); err != nil {
		return Result{}, err
	}
	el := time.Since(start)
	st, err := f.Stat()
	if err != nil {
		return Result{}, err
	}
	return Result{Docs: tag.RowsAffected(), Bytes: st.Size(), Seconds: el.Seconds()}, nil
}

// sqlBest runs each query and keeps the fastest: what a user would pick.
// The first call tries them all and sets *pick to the fastest; later calls
// run only that one.
func sqlBest(ctx context.Context, db string, queries map[string]string, pick *string, file string) (Result, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return Result{}, err
	}
	defer conn.Close(ctx)
	var best Result
	for name, q := range queries {
		if *pick != "" && name != *pick {
			continue
		}
		r, err := copyOut(ctx, conn, q, file)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
		r.Note = name
		if best.Seconds == 0 || r.Seconds < best.Seconds {
			best = r
		}
	}
	if *pick == "" {
		*pick = best.Note
		// The file holds the last query's output: keep the best one's for
		// the comparison with A.
		if _, err := copyOut(ctx, conn, queries[best.Note], file); err != nil {
			return Result{}, err
		}
	}
	return best, nil
}

// sqlAll runs every query (one per collection) and adds them up.
func sqlAll(ctx context.Context, db string, queries map[string]string, file string) (Result, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return Result{}, err
	}
	defer conn.Close(ctx)
	var sum Result
	for name, q := range queries {
		r, err := copyOut(ctx, conn, q, file+"."+name)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", name, err)
		}
		sum.Docs += r.Docs
		sum.Bytes += r.Bytes
		sum.Seconds += r.Seconds
	}
	return sum, nil
}

// personQueries build the person example's documents inside PostgreSQL.
var personQueries = map[string]string{
	"group-by-join": `
SELECT json_build_object('_id', p.id, 'firstName', p.first_name, 'lastName', p.last_name,
  'addresses', coalesce(a.arr, '[]'::json), 'contactDetails', coalesce(c.arr, '[]'::json))
FROM person p
LEFT JOIN (SELECT person_id, json_agg(json_strip_nulls(json_build_object('line1', line1, 'line2', line2, 'city', city, 'state', state, 'zip', zip)) ORDER BY id) AS arr
           FROM address GROUP BY person_id) a ON a.person_id = p.id
LEFT JOIN (SELECT cd.person_id, json_agg(json_strip_nulls(json_build_object(t.name, cd.detail, 'extension', cd.extension)) ORDER BY cd.id) AS arr
           FROM contact_detail cd JOIN contact_detail_type t ON t.id = cd.type_id GROUP BY cd.person_id) c ON c.person_id = p.id
ORDER BY p.id`,
	"lateral": `
SELECT json_build_object('_id', p.id, 'firstName', p.first_name, 'lastName', p.last_name,
  'addresses', coalesce(a.arr, '[]'::json), 'contactDetails', coalesce(c.arr, '[]'::json))
FROM person p
LEFT JOIN LATERAL (SELECT json_agg(json_strip_nulls(json_build_object('line1', x.line1, 'line2', x.line2, 'city', x.city, 'state', x.state, 'zip', x.zip)) ORDER BY x.id) AS arr
                   FROM address x WHERE x.person_id = p.id) a ON true
LEFT JOIN LATERAL (SELECT json_agg(json_strip_nulls(json_build_object(t.name, cd.detail, 'extension', cd.extension)) ORDER BY cd.id) AS arr
                   FROM contact_detail cd JOIN contact_detail_type t ON t.id = cd.type_id WHERE cd.person_id = p.id) c ON true
ORDER BY p.id`,
}

// blogQueries build the blog example's posts and bucket pages.
var blogQueries = map[string]string{
	"posts": `
SELECT json_strip_nulls(json_build_object('_id', p.id, 'name', p.name, 'summary', p.summary, 'recentComments', coalesce(r.arr, '[]'::json)))
FROM post p
LEFT JOIN LATERAL (SELECT json_agg(json_build_object('id', c.id, 'author', c.author, 'comment', c.comment) ORDER BY c.created_at DESC, c.id DESC) AS arr
                   FROM (SELECT * FROM comment c WHERE c.post_id = p.id ORDER BY c.created_at DESC, c.id DESC LIMIT 3) c) r ON true
ORDER BY p.id`,
	"comments": `
SELECT json_build_object('_id', post_id || '-' || page, 'postId', post_id, 'page', page,
  'comments', json_agg(json_build_object('id', id, 'author', author, 'comment', comment) ORDER BY rn))
FROM (SELECT c.*, row_number() OVER w - 1 AS rn, (row_number() OVER w - 1) / 100 AS page
      FROM comment c WINDOW w AS (PARTITION BY post_id ORDER BY created_at, id)) x
GROUP BY post_id, page
ORDER BY post_id, page`,
}

// naive is a C run: the loader typical scripts are: one query per person
// for each of its relations.
func naive(ctx context.Context, db string, n int, file string) (Result, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return Result{}, err
	}
	defer conn.Close(ctx)
	f, err := os.Create(file)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	settle()
	start := time.Now()
	type person struct {
		ID                  int32
		First, Last         string
		Addresses, Contacts []map[string]any
	}
	rows, err := conn.Query(ctx, "SELECT id, first_name, last_name FROM person ORDER BY id LIMIT $1", n)
	if err != nil {
		return Result{}, err
	}
	var people []person
	for rows.Next() {
		var p person
		if err := rows.Scan(&p.ID, &p.First, &p.Last); err != nil {
			return Result{}, err
		}
		people = append(people, p)
	}
	if err := rows.Err(); err != nil {
		return Result{}, err
	}
	for _, p := range people {
		p.Addresses, err = maps(ctx, conn, "SELECT line1, line2, city, state, zip FROM address WHERE person_id = $1 ORDER BY id", p.ID)
		if err != nil {
			return Result{}, err
		}
		p.Contacts, err = maps(ctx, conn, "SELECT t.name, cd.detail, cd.extension FROM contact_detail cd JOIN contact_detail_type t ON t.id = cd.type_id WHERE cd.person_id = $1 ORDER BY cd.id", p.ID)
		if err != nil {
			return Result{}, err
		}
		contacts := make([]map[string]any, len(p.Contacts))
		for i, c := range p.Contacts {
			contacts[i] = map[string]any{c["name"].(string): c["detail"]}
			if c["extension"] != nil {
				contacts[i]["extension"] = c["extension"]
			}
		}
		b, err := json.Marshal(map[string]any{"_id": p.ID, "firstName": p.First, "lastName": p.Last, "addresses": p.Addresses, "contactDetails": contacts})
		if err != nil {
			return Result{}, err
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return Result{}, err
	}
	el := time.Since(start)
	st, _ := f.Stat()
	return Result{Docs: int64(len(people)), Bytes: st.Size(), Seconds: el.Seconds(), Note: "subset; docs/s extrapolates"}, nil
}

// maps runs a query for one parent and returns its rows as maps, NULLs
// left out.
func maps(ctx context.Context, conn *pgx.Conn, sql string, id int32) ([]map[string]any, error) {
	rows, err := conn.Query(ctx, sql, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []map[string]any{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		m := map[string]any{}
		for i, fd := range rows.FieldDescriptions() {
			if vals[i] != nil {
				m[fd.Name] = vals[i]
			}
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// sameDocs checks that the first n documents of two JSON Lines files are
// equal (numbers by value, key order kept): B builds what A builds.
func sameDocs(a, b string, n int) error {
	la, err := firstLines(a, n)
	if err != nil {
		return err
	}
	lb, err := firstLines(b, n)
	if err != nil {
		return err
	}
	if len(la) != len(lb) {
		return fmt.Errorf("%s has %d lines, %s %d", a, len(la), b, len(lb))
	}
	for i := range la {
		ca, err1 := testenv.Canonical(la[i])
		cb, err2 := testenv.Canonical(strings.ReplaceAll(lb[i], `\\`, `\`))
		if err1 != nil || err2 != nil || ca != cb {
			return fmt.Errorf("document %d differs:\n  %s\n  %s", i+1, la[i], lb[i])
		}
	}
	return nil
}

func firstLines(path string, n int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() && len(out) < n {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}
