package main

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
)

// TestVerifyRepair: documents deleted, changed and added behind a
// migration's back are found by verify, and verify --repair rewrites
// exactly those (the missing and different ones as the source gives
// them) and deletes the one the source does not give; verify is then
// clean. Under --job, a repair waits for no one: a job that runs refuses
// it.
func TestVerifyRepair(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	t.Parallel()
	db := testenv.PostgresDB(t, repoPath(t, "testdata", "examples", "seed.sql"))
	uri, mdb := testenv.MongoDB(t)
	mapping := example(t, "blog")
	base := []string{"--mapping", mapping, "--source", db, "--target", uri}
	mustCLI(t, append([]string{"migrate", "-q"}, base...)...)
	ctx := context.Background()
	comments, posts := mdb.Collection("comments"), mdb.Collection("posts")
	if _, err := comments.DeleteOne(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if _, err := posts.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := posts.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "name", Value: "tampered"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := posts.InsertOne(ctx, bson.D{{Key: "_id", Value: 999}, {Key: "name", Value: "stray"}}); err != nil {
		t.Fatal(err)
	}
	verify := append([]string{"verify", "-q", "--show", "0"}, base...)
	if out, code := denormCLI(verify...); code != 1 || !strings.Contains(out, "5 documents") {
		t.Fatalf("verify of the tampered target: exit %d, want 1 naming 5 documents:\n%s", code, out)
	}

	// A running job holds the lease: the repair is refused, nothing written.
	tg, err := load.Open(ctx, uri, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(ctx)
	lease, err := job.HoldLease(ctx, tg.Records(), "blogjob", job.LeaseOptions{Command: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	out, code := denormCLI(append(verify, "--repair", "--job", "blogjob")...)
	if code == 0 || !strings.Contains(out, "being run by another process") {
		t.Fatalf("repair while the job runs: exit %d:\n%s", code, out)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}

	out = mustCLI(t, append(verify, "--repair", "--job", "blogjob")...)
	if !strings.Contains(out, "repaired: 4 documents written as the source gives them, 1 document deleted") {
		t.Errorf("verify --repair did not say what it repaired:\n%s", out)
	}
	if out, code := denormCLI(verify...); code != 0 {
		t.Fatalf("verify after the repair: exit %d:\n%s", code, out)
	}

	// A directory cannot have chosen documents replaced: refused.
	dir := t.TempDir() + "/out"
	mustCLI(t, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", dir)
	if out, code := denormCLI("verify", "-q", "--mapping", mapping, "--source", db, "--target", dir, "--repair"); code == 0 || !strings.Contains(out, "--repair needs a target that replaces and deletes chosen documents") {
		t.Errorf("repair of a directory: exit %d:\n%s", code, out)
	}
}
