package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/load"
	"github.com/denorm/denorm/mappings"
)

// connectSource opens the source database.
func connectSource(ctx context.Context, url string) (*pgx.Conn, error) {
	if url == "" {
		return nil, usageError{fmt.Errorf("no source database: give --source postgres://... or set DENORM_SOURCE")}
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, usageError{fmt.Errorf("source URL: %w", load.Redact(err, url))}
	}
	cfg.RuntimeParams["application_name"] = "denorm"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to source: %w", load.Redact(err, url))
	}
	return conn, nil
}

// openSnapshot connects to the source and opens the snapshot every read
// of the run goes through; closeSnap ends both.
func openSnapshot(ctx context.Context, url string) (snap *extract.Snapshot, closeSnap func(), err error) {
	conn, err := connectSource(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	snap, err = extract.Begin(ctx, conn)
	if err != nil {
		conn.Close(ctx)
		return nil, nil, err
	}
	return snap, func() {
		_ = snap.Close(ctx)
		_ = conn.Close(ctx)
	}, nil
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
