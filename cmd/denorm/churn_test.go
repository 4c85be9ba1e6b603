package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/denorm/denorm/internal/churn"
	"github.com/denorm/denorm/internal/testenv"
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

// TestChurnRounds runs randomized rounds (internal/churn) on every example
// mapping over seed.sql and on Pagila (its first 150 customers, see
// testdata/pagila/churn-subset.sql): random inserts, updates, moves,
// renames, deletes of parents with their children and a TRUNCATE, then
// `migrate --job churn --restart` into the same target (a full rebuild,
// standing in for sync until it exists), then the whole target must equal
// a fresh migrate document by document, with field order and BSON types,
// and `denorm verify` must exit 0. DENORM_TEST_SEED=N replays a seed,
// DENORM_TEST_ROUNDS=N changes the number of rounds.
func TestChurnRounds(t *testing.T) {
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
				Ignore:  []string{load.CheckpointCollection},
				Seeds:   2,
				Rounds:  10,
				Middle:  middle[ds.mapping],
				Initial: func(ctx context.Context, r *churn.Run) error {
					return cli(ctx, "migrate", "-q", "--progress", "none", "--mapping", r.Mapping, "--source", r.Source, "--target", r.Target, "--job", "churn")
				},
				Step: func(ctx context.Context, r *churn.Run) error {
					return cli(ctx, "migrate", "-q", "--progress", "none", "--mapping", r.Mapping, "--source", r.Source, "--target", r.Target, "--job", "churn", "--restart")
				},
				Migrate: churnMigrate,
				Verify:  churnVerify,
			}
			for _, f := range ds.sql {
				cfg.SQL = append(cfg.SQL, filepath.Join(root, f))
			}
			if ds.mapping == "pagila" {
				// Every round rebuilds and compares the whole target; on
				// FerretDB that costs seconds per thousand documents, so
				// Pagila's rounds run on its first 150 customers.
				cfg.Seeds = 1
				cfg.SQL = append(cfg.SQL, filepath.Join(root, "testdata", "pagila", "churn-subset.sql"))
			}
			churn.RunRounds(t, cfg)
		})
	}
}
