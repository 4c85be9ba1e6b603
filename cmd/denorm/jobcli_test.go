package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
)

// TestJobCommandLine covers the job decisions the crash test does not:
// usage errors, a changed mapping, a corrupt checkpoint, a finished job,
// status output, and a resumed directory job equal to a plain run.
func TestJobCommandLine(t *testing.T) {
	src := seedDB(t)
	mapping := filepath.Join(t.TempDir(), "blog.yaml")
	orig, err := os.ReadFile(example(t, "blog"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mapping, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := []string{"migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--target", dir, "--batch-size", "2"}
	expect := func(wantCode int, wantText []string, args ...string) string {
		t.Helper()
		return expectCLI(t, wantCode, wantText, args...)
	}
	expect(2, []string{"--workers and --partition need a server target"}, append(base, "--workers", "2")...)
	expect(2, []string{"--partition \"3/3\""}, append(base, "--partition", "3/3", "--target", "mongodb://127.0.0.1:1/x")...)
	expect(2, []string{"need --job"}, append(base, "--resume")...)
	expect(2, []string{"exclude each other"}, append(base, "--job", "j", "--resume", "--restart")...)
	expect(2, []string{`job "j" has no checkpoint`}, append(base, "--job", "j", "--resume")...)

	plain := t.TempDir()
	expect(0, nil, append(base, "--target", plain)...)
	expect(0, nil, append(base, "--job", "j")...)
	for _, f := range []string{"posts.jsonl", "comments.jsonl"} {
		a, _ := os.ReadFile(filepath.Join(plain, f))
		b, _ := os.ReadFile(filepath.Join(dir, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s of the job differs from the plain run's", f)
		}
	}
	expect(0, []string{"job j finished at", "nothing to resume"}, append(base, "--job", "j", "--resume")...)
	expect(0, []string{"job j: done", "posts", "comments", "next: nothing"}, "status", "--target", dir)

	// An unfinished job: mark the checkpoint running again.
	ck := filepath.Join(dir, "_denorm", "j.json")
	b, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	running := strings.Replace(string(b), `"phase": "done"`, `"phase": "running"`, 1)
	if err := os.WriteFile(ck, []byte(running), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(2, []string{`job "j" in`, "is unfinished", "To continue it:", "--job j --batch-size 2 --resume", "To start it over:", "--restart"}, append(base, "--job", "j")...)
	expect(0, []string{"job j: stopped,", "no process runs it: last run by migrate", "next: denorm migrate", "--resume"}, "status", "--target", dir, "--job", "j")

	// A changed mapping refuses to resume.
	if err := os.WriteFile(mapping, append(orig, []byte("\n# changed\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(1, []string{"cannot resume: the mapping file changed", "--restart"}, append(base, "--job", "j", "--resume")...)
	if err := os.WriteFile(mapping, orig, 0o644); err != nil {
		t.Fatal(err)
	}

	// A corrupt checkpoint has its own error; --restart starts over.
	if err := os.WriteFile(ck, []byte(running[:len(running)/2]), 0o644); err != nil {
		t.Fatal(err)
	}
	expect(1, []string{"is corrupt", "--restart"}, append(base, "--job", "j", "--resume")...)
	expect(1, []string{"is corrupt", "1 corrupt checkpoint(s)"}, "status", "--target", dir)
	expect(0, nil, append(base, "--job", "j", "--restart")...)
	expect(0, []string{"job j: done"}, "status", "--target", dir, "--job", "j")
	expect(1, []string{`no job "nope"`}, "status", "--target", dir, "--job", "nope")
}

// TestRestartEmptiesServerTarget: --restart on a server target first
// empties the job's collections (the documents of a post deleted from
// the source since, with its comments' page, are gone afterwards), and
// leaves the other collections of the database alone; with --partition
// it empties nothing (other partitions' documents are there), as
// README.md says. A document the job did not write makes --restart
// refuse (exit 2), deleting nothing and keeping the job's checkpoint;
// --restart --drop then starts over.
func TestRestartEmptiesServerTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	src := seedDB(t)
	uri, db := testenv.MongoDB(t)
	ctx := context.Background()
	base := []string{"migrate", "-q", "--progress", "none", "--mapping", example(t, "blog"), "--source", src, "--target", uri, "--job", "j"}
	expectCLI(t, 0, nil, base...)
	want := map[string][]string{}
	for _, c := range []string{"posts", "comments"} {
		if want[c] = testenv.DumpCollection(t, db, c); len(want[c]) == 0 {
			t.Fatalf("the job wrote no %s", c)
		}
	}
	// A post (and its comment) the job wrote, deleted from the source
	// since: their documents are the job's, and --restart deletes them.
	testenv.Exec(t, src, `INSERT INTO post VALUES (9, 'Gone soon', NULL);
INSERT INTO comment (id, post_id, author, comment, created_at) VALUES (900, 9, 'anon', 'bye', now());`)
	expectCLI(t, 0, nil, append(base, "--restart")...)
	testenv.Exec(t, src, `DELETE FROM comment WHERE post_id = 9; DELETE FROM post WHERE id = 9;`)
	if _, err := db.Collection("unrelated").InsertOne(ctx, bson.D{{Key: "_id", Value: "other"}}); err != nil {
		t.Fatal(err)
	}
	expectCLI(t, 0, []string{"--restart: deleted the 4 documents of collection posts (the job's: denorm's last run left 4 there"}, append(base, "--restart")...)
	for c, docs := range want {
		testenv.EqualDocs(t, "after --restart: "+c, docs, testenv.DumpCollection(t, db, c))
	}
	if n := len(testenv.DumpCollection(t, db, "unrelated")); n != 1 {
		t.Errorf("--restart touched a collection not the job's: unrelated holds %d documents, want 1", n)
	}

	stray := func(colls ...string) {
		t.Helper()
		for _, c := range colls {
			if _, err := db.Collection(c).InsertOne(ctx, bson.D{{Key: "_id", Value: "stray"}, {Key: "note", Value: "no source row gives me"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A document the job did not write: --restart refuses, and the job
	// stays as it was (done: a plain rerun would do).
	stray("posts")
	expectCLI(t, 2, []string{"these are not all known to be the job's", "collection posts holds 4 documents (denorm's last run left 3 there", "nothing was deleted", "--restart --drop"}, append(base, "--restart")...)
	if n := len(testenv.DumpCollection(t, db, "posts")); n != len(want["posts"])+1 {
		t.Errorf("a refused --restart changed posts: %d documents, want %d", n, len(want["posts"])+1)
	}
	expectCLI(t, 0, []string{"job j: done"}, "status", "--target", uri, "--job", "j")
	expectCLI(t, 0, []string{"--drop: dropped collection posts"}, append(base, "--restart", "--drop")...)
	for c, docs := range want {
		testenv.EqualDocs(t, "after --restart --drop: "+c, docs, testenv.DumpCollection(t, db, c))
	}

	// A partition's restart leaves what is in the collections.
	p := append(slices.Clone(base), "--partition", "0/2")
	expectCLI(t, 0, nil, p...)
	stray("posts", "comments")
	expectCLI(t, 0, nil, append(p, "--restart")...)
	for _, c := range []string{"posts", "comments"} {
		if got := testenv.DumpCollection(t, db, c); len(got) != len(want[c])+1 {
			t.Errorf("--partition 0/2 --restart: %s holds %d documents, want the %d of the first run and the stray one", c, len(got), len(want[c]))
		}
	}
}
