package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
)

// sourceUsage is --source's help in every command that reads the source
// (openSource: the flag, DENORM_SOURCE, else libpq's PG* variables).
const sourceUsage = "source PostgreSQL URL (env DENORM_SOURCE; else PG* variables and .pgpass)"

// openSource checks the source URL; it does not connect. rowSecurity
// (--row-security) keeps row-level security on in its sessions.
func openSource(url string, rowSecurity bool) (*extract.Source, error) {
	if url == "" {
		if !libpqSet() {
			return nil, usageError{fmt.Errorf("no source database: give --source postgres://..., set DENORM_SOURCE, or set PGHOST, PGDATABASE, PGUSER... (or PGSERVICE) as for psql")}
		}
	}
	src, err := extract.ParseSource(url)
	if err != nil {
		return nil, usageError{fmt.Errorf("source URL: %w", err)}
	}
	if rowSecurity {
		src.KeepRowSecurity()
	}
	return src, nil
}

// openSnapshot connects to the source and opens the snapshot every read
// of the run goes through; closeSnap ends both.
func openSnapshot(ctx context.Context, url string, rowSecurity bool) (snap *extract.Snapshot, closeSnap func(), err error) {
	src, err := openSource(url, rowSecurity)
	if err != nil {
		return nil, nil, err
	}
	snap, err = src.Snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	return snap, func() {
		src.CloseSpares(ctx)
		_ = snap.Close(ctx)
	}, nil
}

// asyncSnapshot is openSnapshot run by a goroutine of its own.
type asyncSnapshot struct {
	cancel context.CancelFunc
	done   chan openedSnapshot
}

type openedSnapshot struct {
	snap      *extract.Snapshot
	closeSnap func()
	err       error
}

// openSnapshotAsync starts openSnapshot; wait takes its result, abandon
// gives it up (the snapshot, once open, is closed by a goroutine, which
// does not keep a command that returns from ending).
func openSnapshotAsync(ctx context.Context, url string, rowSecurity bool) *asyncSnapshot {
	ctx, cancel := context.WithCancel(ctx)
	a := &asyncSnapshot{cancel: cancel, done: make(chan openedSnapshot, 1)}
	go func() {
		snap, closeSnap, err := openSnapshot(ctx, url, rowSecurity)
		a.done <- openedSnapshot{snap, closeSnap, err}
	}()
	return a
}

func (a *asyncSnapshot) wait() (*extract.Snapshot, func(), error) {
	o := <-a.done
	if o.err != nil {
		a.cancel()
		return nil, nil, o.err
	}
	// The snapshot's connections outlive the dial's context: its
	// cancellation must not end them, so it is cancelled with them.
	return o.snap, func() { o.closeSnap(); a.cancel() }, nil
}

func (a *asyncSnapshot) abandon() {
	go func() {
		if o := <-a.done; o.err == nil {
			o.closeSnap()
		}
		a.cancel()
	}()
}

// openPlan reads the mapping file (its mistakes are told before any
// about the source, which is connected to meanwhile: openPlans), opens
// the snapshot (openSnapshot),
// warns about a powerful source role (warnRole), and resolves the mapping
// inside the snapshot. With collections (--collections), the plan holds
// only those; a name the file does not declare is a usage error, told
// before connecting. Tables whose row-level security applies to the
// source role are refused unless rowSecurity (--row-security) says to
// read what the policies show (checkRowSecurity).
func openPlan(ctx context.Context, g *globals, url, mapping string, collections []string, rowSecurity bool) (*extract.Snapshot, *mappings.Plan, func(), error) {
	snap, _, plan, closeSnap, err := openPlans(ctx, g, url, mapping, collections, rowSecurity, false)
	return snap, plan, closeSnap, err
}

// openPlans is openPlan returning the whole mapping's plan too (full),
// besides the plan of the chosen collections (run): coverage is the whole
// mapping's, and reads every table of it. With streams (migrate, verify:
// commands that read the first collection as soon as the plan is
// resolved), the connections its streams need are dialed while the
// catalog is read (see streamsAhead).
func openPlans(ctx context.Context, g *globals, url, mapping string, collections []string, rowSecurity, streams bool) (snap *extract.Snapshot, full, run *mappings.Plan, closeSnap func(), err error) {
	// The snapshot is opened while the mapping is read and checked (a
	// few milliseconds each); the mapping's mistakes are still told
	// first, and then the connection is dropped without waiting for it.
	opening := openSnapshotAsync(ctx, url, rowSecurity)
	f, err := loadMapping(ctx, mapping)
	if err == nil && len(collections) > 0 {
		if err = pipeline.CheckSubset(f.CollectionNames(), collections); err != nil {
			err = usageError{fmt.Errorf("--collections: %w", err)}
		}
	}
	if err != nil {
		opening.abandon()
		return nil, nil, nil, nil, err
	}
	snap, closeSnap, err = opening.wait()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if streams {
		snap.Source().DialAhead(ctx, streamsAhead(f, collections))
	}
	warnRole(ctx, g, snap)
	cat, err := extract.ReadCatalog(ctx, snap, f.Tables())
	if err == nil {
		if full, err = mappings.Resolve(f, cat); err == nil {
			run = full
			if len(collections) > 0 {
				run, err = pipeline.Subset(full, collections)
			}
		}
		if err == nil {
			_, err = checkRowSecurity(g, cat.Role, full.Tables(), rowSecurity)
		}
		if err == nil {
			return snap, full, run, closeSnap, nil
		}
	}
	closeSnap()
	return nil, nil, nil, nil, err
}

// streamsAhead is how many connections to dial ahead for the first
// collection a run reads: one per table it declares (a merge stream reads
// each on a connection of its own), at most maxAhead. A guess from the
// file: a relation read otherwise leaves its connection to a later
// collection, or unused until the end (CloseSpares).
func streamsAhead(f *mappings.File, collections []string) int {
	const maxAhead = 4
	for _, c := range f.Collections {
		if len(collections) == 0 || slices.Contains(collections, c.Name) {
			return min(1+c.Relations(), maxAhead)
		}
	}
	return 0
}

// loadMapping reads and parses the mapping file.
func loadMapping(ctx context.Context, path string) (*mappings.File, error) {
	if path == "" {
		return nil, usageError{fmt.Errorf("no mapping file: give --mapping FILE")}
	}
	return mappings.LoadContext(ctx, path)
}

// warnRole warns, once on stderr, when the source role can do more than
// read: the mapping's filters and sql: fields are SQL that runs with the
// role's privileges, and READ ONLY does not stop pg_terminate_backend() or
// COPY ... TO PROGRAM (SECURITY.md). A failure to tell is only logged.
func warnRole(ctx context.Context, g *globals, snap *extract.Snapshot) {
	p, err := extract.ReadRolePowers(ctx, snap)
	if err != nil {
		g.log.Debug("source role not checked", "error", err)
		return
	}
	if !p.Dangerous() {
		return
	}
	what := "is a superuser"
	if !p.Superuser {
		what = "is a member of " + strings.Join(p.Roles, ", ")
	}
	g.log.Warn(fmt.Sprintf("the source role %q %s: the mapping's filters and sql: fields run with those privileges (READ ONLY stops writes, not pg_terminate_backend() or COPY ... TO PROGRAM); connect as a role that can only read the mapped tables (see SECURITY.md)", p.Role, what))
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
