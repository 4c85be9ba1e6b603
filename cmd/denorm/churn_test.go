package main

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
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
// one per method (their first sync made the initial copy; the logical
// job's, with --workers 2, is first killed mid-copy while a round of
// random writes runs, and resumed, see killedCopy): --method
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
			cfg.Interrupt = killedCopy(t)
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

// killedCopy is the randomized rounds' interrupted initial copy: the
// logical job's first sync, with --workers 2 and a batch of one row, is
// killed (SIGKILL, DENORM_TEST_HALT) at a checkpoint of its copy the seed
// chooses while a round of random writes runs; the initial copy
// (syncBoth) then resumes it from a new snapshot and applies the changes
// since the slot's, and round 0 compares the target with a fresh
// migrate. A copy that ends before the aimed checkpoint (small tables) is
// not killed, which the log says.
func killedCopy(t *testing.T) func(ctx context.Context, r *churn.Run) (*churn.Report, error) {
	bin := denormBinary(t)
	return func(ctx context.Context, r *churn.Run) (*churn.Report, error) {
		halt := fmt.Sprintf("copy checkpoint saved:%d", 2+r.Seed%6)
		start := time.Now()
		p := startSync(t, []string{haltEnv + "=" + halt}, bin, "sync", "-q", "--mapping", r.Mapping, "--source", r.Source, "--target", r.Target,
			"--job", roundsJob(r), "--method", job.SyncLogical, "--once", "--workers", "2", "--batch-size", "1")
		rep, err := r.Gen.Round(ctx, false)
		<-p.done
		if err != nil {
			return nil, fmt.Errorf("the random writes during the initial copy: %w", err)
		}
		switch out := p.out.String(); {
		case p.code == -1 && strings.Contains(out, "halting at"):
			t.Logf("the initial copy (--workers 2) killed at %s, during %d write statements, in %s", halt, rep.Statements, time.Since(start).Round(time.Millisecond))
		case p.code == 0:
			t.Logf("the initial copy (--workers 2) ended before %s, during %d write statements, in %s", halt, rep.Statements, time.Since(start).Round(time.Millisecond))
		default:
			return nil, fmt.Errorf("the initial copy to kill at %s: exit %d\n%s", halt, p.code, out)
		}
		return rep, nil
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
