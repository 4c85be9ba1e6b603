package main

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/internal/churn"
	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// cli runs one denorm command line in-process; an exit code other than 0
// is an error carrying the output.
func cli(ctx context.Context, args ...string) error {
	var out, errb bytes.Buffer
	if code := run(ctx, args, &out, &errb); code != 0 {
		return fmt.Errorf("denorm %s: exit %d\n%s%s", args[0], code, out.String(), errb.String())
	}
	return nil
}

// churnMigrate is the reference of randomized rounds: denorm migrate of
// the source into an empty database.
func churnMigrate(ctx context.Context, r *churn.Run, target string) error {
	return cli(ctx, "migrate", "-q", "--progress", "none", "--mapping", r.Mapping, "--source", r.Source, "--target", target)
}

// churnVerify: denorm verify of the target must exit 0.
func churnVerify(ctx context.Context, r *churn.Run) error {
	return cli(ctx, "verify", "-q", "--mapping", r.Mapping, "--source", r.Source, "--target", r.Target, "--show", "5")
}

// TestChurnRounds runs randomized rounds (internal/churn) of denorm sync
// on every example mapping over seed.sql (2 seeds) and on Pagila (1 seed,
// on its first 150 customers, see testdata/pagila/churn-subset.sql):
// random inserts, updates, moves, renames, deletes of parents with their
// children and a TRUNCATE, then `sync --once` of two jobs side by side,
// one per method (their first sync made the initial copy): --method
// logical into the target the harness checks - which must equal a fresh
// migrate document by document, with field order and BSON types, and
// pass `denorm verify` - and --method diff into a second database, which
// must equal the first document by document as raw BSON (so it equals the
// fresh migrate too). DENORM_TEST_SEED=N replays a seed,
// DENORM_TEST_ROUNDS=N changes the number of rounds.
func TestChurnRounds(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	root := testenv.Root(t)
	middle := map[string][]string{
		"blog":   {"comment"},
		"pagila": {"rental", "payment"},
	}
	for _, ds := range verifyDatasets {
		t.Run(ds.mapping, func(t *testing.T) {
			t.Parallel() // at most -parallel (GOMAXPROCS) at a time; much of a round is waiting on the servers
			mapping := filepath.Join(root, "mappings", "examples", ds.mapping+".yaml")
			file, err := mappings.Load(mapping)
			if err != nil {
				t.Fatal(err)
			}
			cfg := churn.Config{
				Mapping: mapping,
				Tables:  file.Tables(),
				Ignore:  []string{load.RecordCollection},
				Seeds:   2,
				Rounds:  10,
				Middle:  middle[ds.mapping],
				Step:    syncBoth,
				Migrate: churnMigrate,
				Verify:  churnVerify,
				Cleanup: roundsCleanup(t),
			}
			for _, f := range ds.sql {
				cfg.SQL = append(cfg.SQL, filepath.Join(root, f))
			}
			if ds.mapping == "pagila" {
				// Every round compares the whole target with a fresh
				// migrate; on FerretDB that costs seconds per thousand
				// documents, so Pagila's rounds run on its first 150
				// customers, with one seed.
				cfg.Seeds = 1
				cfg.SQL = append(cfg.SQL, filepath.Join(root, "testdata", "pagila", "churn-subset.sql"))
			}
			cfg.SQL = append(cfg.SQL, filepath.Join(root, identityFull))
			churn.RunRounds(t, cfg)
		})
	}
}

// syncBoth is the step of the randomized rounds: `sync --once` with
// --method logical into r.Target and with --method diff into diffTarget,
// side by side, then the two targets must hold the same documents, byte
// for byte.
func syncBoth(ctx context.Context, r *churn.Run) error {
	return syncBothWith(ctx, r, r.Mapping)
}

// syncBothWith is syncBoth with the mapping file given.
func syncBothWith(ctx context.Context, r *churn.Run, mapping string) error {
	if err := syncBothMappings(ctx, r, mapping); err != nil {
		return err
	}
	client, err := mongo.Connect(options.Client().ApplyURI(r.Target))
	if err != nil {
		return err
	}
	defer client.Disconnect(ctx)
	d, err := testenv.CompareTargets(ctx, client.Database(lastPath(r.Target)), client.Database(lastPath(diffTarget(r))),
		testenv.CompareOptions{Ignore: []string{load.RecordCollection}})
	if err != nil {
		return err
	}
	if !d.Equal() {
		return fmt.Errorf("sync --method diff gave another target than --method logical (want: logical, found: diff):\n%s", d)
	}
	return nil
}

// syncBothMethods runs `sync --once` with --method logical into r.Target
// and with --method diff into diffTarget, side by side.
func syncBothMethods(ctx context.Context, r *churn.Run) error {
	return syncBothMappings(ctx, r, r.Mapping)
}

// syncBothMappings is syncBothMethods with the mapping file given.
func syncBothMappings(ctx context.Context, r *churn.Run, mapping string) error {
	jobName := roundsJob(r)
	logical, diff := make(chan error, 1), make(chan error, 1)
	go func() {
		logical <- cli(ctx, "sync", "-q", "--mapping", mapping, "--source", r.Source, "--target", r.Target, "--job", jobName, "--method", job.SyncLogical, "--once")
	}()
	go func() {
		diff <- cli(ctx, "sync", "-q", "--mapping", mapping, "--source", r.Source, "--target", diffTarget(r), "--job", jobName, "--method", job.SyncDiff, "--once")
	}()
	errL, errD := <-logical, <-diff
	switch {
	case errL != nil:
		return fmt.Errorf("sync --method logical: %w", errL)
	case errD != nil:
		return fmt.Errorf("sync --method diff: %w", errD)
	}
	return nil
}

// diffTarget is the database of r's target server that the rounds' diff
// job keeps current.
func diffTarget(r *churn.Run) string { return r.Target + "_diff" }

// dropTarget drops the database of a mongodb:// URI.
func dropTarget(ctx context.Context, uri string) error {
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer client.Disconnect(ctx)
	return client.Database(lastPath(uri)).Drop(ctx)
}

// roundsJob names the sync job of a run of rounds: unique on the test
// server, whose replication slots are server-wide, as each run has its own
// source database.
func roundsJob(r *churn.Run) string {
	h := fnv.New32a()
	h.Write([]byte(r.Source))
	return fmt.Sprintf("rounds_%d_%08x", r.Seed%1_000_000, h.Sum32())
}

// roundsCleanup is the Cleanup of randomized rounds that sync both
// methods (syncBoth): the logical job's slot and the diff job's target
// are dropped when a seed ends.
func roundsCleanup(t *testing.T) func(context.Context, *churn.Run) {
	return func(ctx context.Context, r *churn.Run) {
		if err := dropSlot(ctx, r.Source, roundsJob(r)); err != nil {
			t.Errorf("drop the slot of job %s: %v", roundsJob(r), err)
		}
		if err := dropTarget(ctx, diffTarget(r)); err != nil {
			t.Errorf("drop %s: %v", diffTarget(r), err)
		}
	}
}

// dropSlot drops a logical sync job's replication slot and publication
// from the source, if they exist.
func dropSlot(ctx context.Context, source, jobName string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	src, err := extract.ParseSource(source)
	if err != nil {
		return err
	}
	lg, err := src.Logical(jobName)
	if err != nil {
		return err
	}
	return lg.Drop(ctx)
}
