package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// openSource checks the source URL; it does not connect.
func openSource(url string) (*extract.Source, error) {
	if url == "" {
		return nil, usageError{fmt.Errorf("no source database: give --source postgres://... or set DENORM_SOURCE")}
	}
	src, err := extract.ParseSource(url)
	if err != nil {
		return nil, usageError{fmt.Errorf("source URL: %w", load.Redact(err, url))}
	}
	return src, nil
}

// openSnapshot connects to the source and opens the snapshot every read
// of the run goes through; closeSnap ends both.
func openSnapshot(ctx context.Context, url string) (snap *extract.Snapshot, closeSnap func(), err error) {
	src, err := openSource(url)
	if err != nil {
		return nil, nil, err
	}
	snap, err = src.Snapshot(ctx)
	if err != nil {
		return nil, nil, load.Redact(err, url)
	}
	return snap, func() { _ = snap.Close(ctx) }, nil
}

// openPlan opens the snapshot (openSnapshot) and resolves the mapping file
// inside it (loadPlan).
func openPlan(ctx context.Context, url, mapping string) (*extract.Snapshot, *mappings.Plan, func(), error) {
	snap, closeSnap, err := openSnapshot(ctx, url)
	if err != nil {
		return nil, nil, nil, err
	}
	plan, err := loadPlan(ctx, snap, mapping)
	if err != nil {
		closeSnap()
		return nil, nil, nil, err
	}
	return snap, plan, closeSnap, nil
}

// loadPlan parses the mapping, reads the catalog inside snap and resolves.
func loadPlan(ctx context.Context, q extract.Querier, path string) (*mappings.Plan, error) {
	if path == "" {
		return nil, usageError{fmt.Errorf("no mapping file: give --mapping FILE")}
	}
	f, err := mappings.Load(path)
	if err != nil {
		return nil, err
	}
	cat, err := extract.ReadCatalog(ctx, q, f.Tables())
	if err != nil {
		return nil, err
	}
	return mappings.Resolve(f, cat)
}

// openOutput is where a command writes its result: the file path
// (created or truncated), or stdout when path is empty. what names the
// file in errors.
func openOutput(g *globals, path, what string) (io.Writer, func(), error) {
	if path == "" {
		return g.stdout, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	return f, func() { f.Close() }, nil
}
