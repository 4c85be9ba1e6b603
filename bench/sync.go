package main

// The sync benchmarks (issue 14), run by make bench after the others
// (SKIP_SYNC=1 skips them, SKIP_SYNC_FOLLOW=1, SKIP_SYNC_COPY=1 and
// SKIP_SYNC_DIFF=1 one of them; SYNC_ONLY=1 runs only them and writes
// bench/results-sync.json):
//
//	SF denorm sync --method logical --follow of the person example into
//	   FerretDB while writers update persons at a steady rate, three rates:
//	   changes applied per second and the end-to-end lag of every write,
//	   from its COMMIT returning to the poller first reading the new value
//	   in the target (and sync's own commit -> acknowledgement lag, from
//	   its metrics); 1,000 persons, since every find by _id, the poller's
//	   included, scans the collection on FerretDB with SQLite
//	SC the sync ceiling: the offered rate of changes raised until p99 lag
//	   passes 2 s (ceiling.go)
//	SW the initial copy of a new logical job with --workers 1, 2 and 4
//	   (synccopy.go)
//	SD a sync --method diff pass over SYNC_DIFF_SCALE persons (1,000,002
//	   documents by default) that have not changed since the migration,
//	   against denorm verify of the same data, interleaved: seconds, and the
//	   write commands the target received during each (FerretDB's
//	   serverStatus counters)

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// SyncReport is the sync benchmarks' part of the results.
type SyncReport struct {
	Ceiling []*CeilingRun `json:"ceiling,omitempty"`
	Follow  []FollowRun   `json:"follow,omitempty"`
	Diff    *DiffRun      `json:"diff,omitempty"`
	Copy    *CopyRun      `json:"copy,omitempty"`
}

// FollowRun is SF at one write rate.
type FollowRun struct {
	Persons int `json:"persons"`
	// AskedRate is the writes per second asked for; WriteRate what the
	// writers achieved (each write is one UPDATE of one person, its own
	// transaction).
	AskedRate float64 `json:"askedWritesPerSecond"`
	WriteRate float64 `json:"writesPerSecond"`
	Writes    int     `json:"writes"`
	// Applied is sync's changes applied per second (its
	// denorm_sync_changes_applied_total metric) from the first write to
	// the last write seen in the target.
	Applied float64 `json:"changesAppliedPerSecond"`
	// Lags, in milliseconds, over every write: COMMIT returned -> the
	// poller's read returned the new value. Resolution is the poll
	// interval plus the median poll duration: each lag is late by at most
	// that.
	LagP50       float64 `json:"lagP50ms"`
	LagP99       float64 `json:"lagP99ms"`
	LagMax       float64 `json:"lagMaxMs"`
	ResolutionMs float64 `json:"resolutionMs"`
	// SyncP50 and SyncP99 are the same quantiles of sync's own measure of
	// each transaction (commit on the source's clock -> the target's
	// acknowledgement), from its denorm_sync_transaction_lag_seconds
	// histogram: the upper bound of the bucket holding the quantile
	// (buckets grow by 38%).
	SyncP50 float64 `json:"syncLagP50ms"`
	SyncP99 float64 `json:"syncLagP99ms"`
	// Superseded counts writes overwritten by a later write of the same
	// person before they were seen (not in the lags).
	Superseded int    `json:"superseded"`
	Load       string `json:"load"`
}

// DiffRun is SD.
type DiffRun struct {
	Docs      int64     `json:"docs"`
	MigrateS  float64   `json:"migrateSeconds"`
	VerifyS   []float64 `json:"verifySeconds"`
	DiffS     []float64 `json:"diffSeconds"`
	VerifyMed float64   `json:"verifyMedianSeconds"`
	DiffMed   float64   `json:"diffMedianSeconds"`
	// Pairs are diff / verify of each round (the two runs made one after
	// the other); Ratio is their median: on a machine whose load drifts
	// during the benchmark, the ratio of the medians would compare runs
	// made far apart.
	Pairs []float64 `json:"diffOverVerifyByRound"`
	Ratio float64   `json:"diffOverVerify"`
	// DiffWrites are the document writes of each diff pass: the target's
	// insert, update and delete commands during the pass, less the job's
	// bookkeeping (jobBookkeeping). VerifyWrites the same for verify (no
	// job, nothing to subtract).
	DiffWrites   []int64  `json:"diffWrites"`
	VerifyWrites []int64  `json:"verifyWrites"`
	DiffSummary  []string `json:"diffSummary"`
	Load         []string `json:"load"`
}

type syncConfig struct {
	only          bool
	skip          bool
	skipFollow    bool
	skipDiff      bool
	skipCopy      bool
	followPersons int
	followSeconds int
	rates         []float64
	diffScale     int
}

func syncFlags(c *syncConfig) {
	c.only = os.Getenv("SYNC_ONLY") != ""
	c.skip = os.Getenv("SKIP_SYNC") != ""
	c.skipFollow = os.Getenv("SKIP_SYNC_FOLLOW") != ""
	c.skipDiff = os.Getenv("SKIP_SYNC_DIFF") != ""
	c.skipCopy = os.Getenv("SKIP_SYNC_COPY") != ""
	// Small: on FerretDB with SQLite every find by _id, the poller's
	// included, scans the collection.
	c.followPersons = envInt("SYNC_FOLLOW_PERSONS", 1_000)
	c.followSeconds = envInt("SYNC_FOLLOW_SECONDS", 20)
	c.rates = []float64{20, 100, 500}
	if s := os.Getenv("SYNC_RATES"); s != "" {
		c.rates = nil
		for _, f := range strings.Split(s, ",") {
			if v, err := strconv.ParseFloat(f, 64); err == nil && v > 0 {
				c.rates = append(c.rates, v)
			}
		}
	}
	c.diffScale = envInt("SYNC_DIFF_SCALE", 1_000_000)
}

// runSync runs SC, SF, SW and SD.
func runSync(ctx context.Context, c config, admin, base string) (*SyncReport, error) {
	rep := &SyncReport{}
	if !c.ceiling.skip {
		for _, n := range c.ceiling.customers {
			log.Printf("SC: the sync ceiling, %d customers, rates from %.0f changes/s by x%.1f, %d s each", n, c.ceiling.start, c.ceiling.factor, c.ceiling.stepS)
			r, err := ceilingBench(ctx, c, admin, base, n)
			if err != nil {
				return nil, fmt.Errorf("SC: %w", err)
			}
			rep.Ceiling = append(rep.Ceiling, r)
		}
	}
	if !c.sync.skipFollow {
		if err := runFollow(ctx, c, admin, base, rep); err != nil {
			return nil, err
		}
	}
	if !c.sync.skipCopy {
		r, err := copyBench(ctx, c, admin, base)
		if err != nil {
			return nil, fmt.Errorf("SW: %w", err)
		}
		rep.Copy = r
	}
	if c.sync.skipDiff {
		return rep, nil
	}
	log.Printf("SD: a diff pass over %d persons against verify", c.sync.diffScale)
	d, err := diffBench(ctx, c, admin, base)
	if err != nil {
		return nil, fmt.Errorf("SD: %w", err)
	}
	rep.Diff = d
	return rep, nil
}

func runFollow(ctx context.Context, c config, admin, base string, rep *SyncReport) error {
	log.Printf("SF: sync --follow of %d persons at %v writes/s, %d s each", c.sync.followPersons, c.sync.rates, c.sync.followSeconds)
	runs, err := followBench(ctx, c, admin, base)
	if err != nil {
		return fmt.Errorf("SF: %w", err)
	}
	rep.Follow = runs
	return nil
}

// identityFull makes every user table's replica identity FULL: what a DBA
// runs for logical sync of the person example (contact_detail.person_id
// and address.person_id are outside the primary key).
const identityFull = `DO $$ DECLARE r record; BEGIN
  FOR r IN SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'
  LOOP EXECUTE format('ALTER TABLE %I.%I REPLICA IDENTITY FULL', r.nspname, r.relname); END LOOP;
END $$;`

// dropSlot drops a leftover replication slot of job (slots are
// server-wide, and a database with a slot cannot be dropped).
func dropSlot(ctx context.Context, admin, job string) error {
	return exec1(ctx, admin, fmt.Sprintf("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'denorm_%s'", job))
}

func followBench(ctx context.Context, c config, admin, base string) ([]FollowRun, error) {
	const job, name = "benchfollow", "bench_sync_follow"
	if err := dropSlot(ctx, admin, job); err != nil {
		return nil, err
	}
	db, err := personDB(ctx, admin, name, c.sync.followPersons)
	if err != nil {
		return nil, err
	}
	if err := exec1(ctx, db, identityFull); err != nil {
		return nil, err
	}
	client, tdb, uri, err := mongoDB(ctx, base, name)
	if err != nil {
		return nil, err
	}
	defer client.Disconnect(ctx)
	f, out, err := startFollower(c.bin, "sync", "--mapping", "mappings/examples/person.yaml", "--source", db, "--target", uri,
		"--job", job, "--method", "logical", "--follow")
	if err != nil {
		return nil, err
	}
	stop, exited, stderr := f.stop, f.exited, &f.stderr
	copied := make(chan struct{})
	// sync's pass lines (one per batch applied) go to a log beside the
	// results, for a look at what the lags are made of.
	passLog, err := os.Create(filepath.Join(os.TempDir(), "denorm-bench-follow.log"))
	if err != nil {
		_ = stop()
		return nil, err
	}
	defer passLog.Close()
	go func() {
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			fmt.Fprintf(passLog, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), sc.Text())
			if strings.Contains(sc.Text(), "initial copy") {
				once.Do(func() { close(copied) })
			}
		}
	}()
	select {
	case <-copied:
	case err := <-exited:
		return nil, fmt.Errorf("sync --follow exited before its initial copy: %v\n%s", err, stderr.String())
	case <-time.After(15 * time.Minute):
		_ = stop()
		return nil, errors.New("no initial copy within 15 minutes")
	}
	var runs []FollowRun
	for _, rate := range c.sync.rates {
		log.Printf("  SF at %.0f writes/s", rate)
		r, err := followRate(ctx, db, tdb.Collection("people"), f.metrics, rate, time.Duration(c.sync.followSeconds)*time.Second, c.sync.followPersons)
		if err != nil {
			_ = stop()
			return nil, fmt.Errorf("at %.0f writes/s: %w\n%s", rate, err, stderr.String())
		}
		log.Printf("    %d writes at %.1f/s; applied %.1f/s; lag p50 %.0f ms, p99 %.0f ms, max %.0f ms (resolution %.0f ms); sync's own p50 <= %.0f ms, p99 <= %.0f ms; load %s",
			r.Writes, r.WriteRate, r.Applied, r.LagP50, r.LagP99, r.LagMax, r.ResolutionMs, r.SyncP50, r.SyncP99, r.Load)
		runs = append(runs, r)
	}
	if err := stop(); err != nil {
		return nil, fmt.Errorf("sync --follow: %v\n%s", err, stderr.String())
	}
	if _, err := timeCmd(c.bin, "sync", "--mapping", "mappings/examples/person.yaml", "--source", db, "--target", uri, "--job", job, "--drop"); err != nil {
		return nil, err
	}
	_ = tdb.Drop(ctx)
	return runs, dropDB(ctx, admin, name)
}

// follower is a `denorm sync --follow` serving its metrics on a free
// port.
type follower struct {
	cmd     *exec.Cmd
	metrics string // the URL of its metrics
	stderr  strings.Builder
	exited  chan error
}

// startFollower starts bin with args and --metrics-addr on a free port;
// out is its standard output.
func startFollower(bin string, args ...string) (*follower, io.Reader, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	f := &follower{metrics: "http://" + addr + "/metrics", exited: make(chan error, 1)}
	f.cmd = exec.Command(bin, append(args, "--metrics-addr", addr)...)
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	f.cmd.Stderr = &f.stderr
	if err := f.cmd.Start(); err != nil {
		return nil, nil, err
	}
	go func() { f.exited <- f.cmd.Wait() }()
	return f, out, nil
}

// stop ends the follower with SIGTERM, and kills it a minute later.
func (f *follower) stop() error {
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-f.exited:
		return err
	case <-time.After(time.Minute):
		_ = f.cmd.Process.Kill()
		return errors.New("sync did not stop within a minute of SIGTERM")
	}
}

// syncMetrics is what followRate reads of sync's metrics: the changes
// applied, and the transaction lag histogram's cumulative bucket counts.
type syncMetrics struct {
	applied float64
	buckets map[float64]float64
}

var (
	appliedLine = regexp.MustCompile(`(?m)^denorm_sync_changes_applied_total\{[^}]*\} (\S+)$`)
	bucketLine  = regexp.MustCompile(`(?m)^denorm_sync_transaction_lag_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} (\S+)$`)
)

func readMetrics(ctx context.Context, url string) (syncMetrics, error) {
	m := syncMetrics{buckets: map[float64]float64{}}
	b, err := metricsText(ctx, url)
	if err != nil {
		return m, err
	}
	for _, x := range appliedLine.FindAllStringSubmatch(b, -1) {
		v, err := strconv.ParseFloat(x[1], 64)
		if err != nil {
			return m, err
		}
		m.applied += v
	}
	for _, x := range bucketLine.FindAllStringSubmatch(b, -1) {
		le, err := strconv.ParseFloat(x[1], 64) // "+Inf" parses
		if err != nil {
			return m, err
		}
		v, err := strconv.ParseFloat(x[2], 64)
		if err != nil {
			return m, err
		}
		m.buckets[le] = v
	}
	return m, nil
}

// metricsText reads sync's metrics page.
func metricsText(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// quantile is the upper bound, in ms, of the histogram bucket holding
// quantile q of the observations made between before and after.
func quantile(before, after syncMetrics, q float64) float64 {
	les := make([]float64, 0, len(after.buckets))
	for le := range after.buckets {
		les = append(les, le)
	}
	slices.Sort(les)
	if len(les) == 0 {
		return math.NaN()
	}
	total := after.buckets[les[len(les)-1]] - before.buckets[les[len(les)-1]]
	for _, le := range les {
		if after.buckets[le]-before.buckets[le] >= q*total {
			return le * 1000
		}
	}
	return math.Inf(1)
}

type pendingWrite struct {
	token  string
	commit time.Time
}

// followRate runs writers at rate writes per second for dur, each write
// an UPDATE of one person's last_name to a new token, and a poller that
// reads the written persons' documents every pollEvery until it sees each
// token.
func followRate(ctx context.Context, db string, people *mongo.Collection, metrics string, rate float64, dur time.Duration, persons int) (FollowRun, error) {
	const pollEvery = 50 * time.Millisecond
	r := FollowRun{Persons: persons, AskedRate: rate}
	before, err := readMetrics(ctx, metrics)
	if err != nil {
		return r, err
	}
	var (
		mu         sync.Mutex
		pending    = map[int32]pendingWrite{}
		lags       []float64
		superseded int
		lastSeen   time.Time
		writeErr   error
	)
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	var polls []time.Duration
	pollDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-pollCtx.Done():
				pollDone <- nil
				return
			case <-time.After(pollEvery):
			}
			mu.Lock()
			ids := make([]int32, 0, len(pending))
			for id := range pending {
				ids = append(ids, id)
			}
			mu.Unlock()
			if len(ids) == 0 {
				continue
			}
			t0 := time.Now()
			cur, err := people.Find(pollCtx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}},
				options.Find().SetProjection(bson.D{{Key: "lastName", Value: 1}}))
			var docs []struct {
				ID       int32  `bson:"_id"`
				LastName string `bson:"lastName"`
			}
			if err == nil {
				err = cur.All(pollCtx, &docs)
			}
			seen := time.Now()
			if err != nil {
				if pollCtx.Err() != nil {
					pollDone <- nil
					return
				}
				pollDone <- err
				return
			}
			polls = append(polls, seen.Sub(t0))
			mu.Lock()
			for _, d := range docs {
				if p, ok := pending[d.ID]; ok && p.token == d.LastName {
					lags = append(lags, float64(seen.Sub(p.commit))/float64(time.Millisecond))
					delete(pending, d.ID)
					lastSeen = seen
				}
			}
			mu.Unlock()
		}
	}()

	start := time.Now()
	total := int(rate * dur.Seconds())
	written, err := offer(ctx, db, rate, total, func(ctx context.Context, conn *pgx.Conn, i int, _ *rand.Rand) error {
		id := int32(1001 + i%persons)
		token := fmt.Sprintf("w%.0f-%d", rate, i)
		if _, err := conn.Exec(ctx, "UPDATE person SET last_name = $1 WHERE id = $2", token, id); err != nil {
			return err
		}
		now := time.Now()
		mu.Lock()
		if _, ok := pending[id]; ok {
			superseded++
		}
		pending[id] = pendingWrite{token, now}
		mu.Unlock()
		return nil
	})
	writeErr = err
	r.Load = loadAvg()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		mu.Lock()
		left := len(pending)
		mu.Unlock()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			stopPoll()
			return r, fmt.Errorf("%d writes not seen in the target 3 minutes after the last", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopPoll()
	if err := <-pollDone; err != nil {
		return r, err
	}
	if writeErr != nil {
		return r, writeErr
	}
	after, err := readMetrics(ctx, metrics)
	if err != nil {
		return r, err
	}
	slices.Sort(lags)
	pct := func(p float64) float64 {
		if len(lags) == 0 {
			return math.NaN()
		}
		return lags[min(len(lags)-1, int(math.Ceil(p*float64(len(lags))))-1)]
	}
	slices.Sort(polls)
	r.Writes = total
	r.WriteRate = float64(total) / written.Seconds()
	r.Applied = (after.applied - before.applied) / lastSeen.Sub(start).Seconds()
	r.SyncP50, r.SyncP99 = quantile(before, after, 0.50), quantile(before, after, 0.99)
	r.LagP50, r.LagP99, r.LagMax = pct(0.50), pct(0.99), pct(1)
	r.ResolutionMs = float64(pollEvery) / float64(time.Millisecond)
	if len(polls) > 0 {
		r.ResolutionMs = float64(pollEvery+polls[len(polls)/2]) / float64(time.Millisecond)
	}
	r.Superseded = superseded
	return r, nil
}

// writeCommands sums FerretDB's insert, update and delete command counters
// (serverStatus metrics.commands).
func writeCommands(ctx context.Context, client *mongo.Client) (int64, error) {
	var st struct {
		Metrics struct {
			Commands map[string]struct {
				Total int64 `bson:"total"`
			} `bson:"commands"`
		} `bson:"metrics"`
	}
	if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		return 0, err
	}
	if st.Metrics.Commands == nil {
		return 0, errors.New("serverStatus has no metrics.commands: the write count needs FerretDB's counters")
	}
	var n int64
	for _, c := range []string{"insert", "update", "delete", "findAndModify"} {
		n += st.Metrics.Commands[c].Total
	}
	return n, nil
}

// A diff pass runs as a job, and a job keeps its lease and checkpoint in
// the target: jobBookkeeping is how many write commands they cost a pass
// that ends normally. The lease is taken (an insert, and a delete of the
// generations the migrate and earlier passes left) and released (an
// update), and the checkpoint is saved once (an update). A lease is also
// renewed every TTL/4 (an update each); passLeaseTTL is long enough that
// no pass lives to renew it, so every write left over is a document's.
const (
	jobBookkeeping = 4
	passLeaseTTL   = "24h"
)

func diffBench(ctx context.Context, c config, admin, base string) (*DiffRun, error) {
	const job, name, mapping = "benchdiff", "bench_sync_diff", "mappings/examples/person.yaml"
	db, err := personDB(ctx, admin, name, c.sync.diffScale)
	if err != nil {
		return nil, err
	}
	client, tdb, uri, err := mongoDB(ctx, base, name)
	if err != nil {
		return nil, err
	}
	defer client.Disconnect(ctx)
	r := &DiffRun{}
	m, err := timeCmd(c.bin, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", uri, "--job", job)
	if err != nil {
		return nil, err
	}
	r.MigrateS = m.wall.Seconds()
	if r.Docs, err = tdb.Collection("people").EstimatedDocumentCount(ctx); err != nil {
		return nil, err
	}
	log.Printf("  migrated %d documents into FerretDB in %.0fs", r.Docs, r.MigrateS)
	tmp, err := os.MkdirTemp("", "denorm-bench-sync-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	verify := func() error {
		w0, err := writeCommands(ctx, client)
		if err != nil {
			return err
		}
		m, err := timeCmd(c.bin, "verify", "-q", "--mapping", mapping, "--source", db, "--target", uri, "--temp-dir", tmp)
		if err != nil {
			return err
		}
		w1, err := writeCommands(ctx, client)
		if err != nil {
			return err
		}
		r.VerifyS = append(r.VerifyS, m.wall.Seconds())
		r.VerifyWrites = append(r.VerifyWrites, w1-w0)
		log.Printf("    verify %.1fs, %d write commands: %s", m.wall.Seconds(), w1-w0, lastLine(m.out))
		return nil
	}
	diff := func() error {
		w0, err := writeCommands(ctx, client)
		if err != nil {
			return err
		}
		m, err := timeCmd(c.bin, "sync", "--mapping", mapping, "--source", db, "--target", uri, "--job", job, "--method", "diff", "--once", "--temp-dir", tmp,
			"--lease-ttl", passLeaseTTL)
		if err != nil {
			return err
		}
		w1, err := writeCommands(ctx, client)
		if err != nil {
			return err
		}
		total := ""
		for _, l := range strings.Split(m.out, "\n") {
			if strings.HasPrefix(l, "TOTAL") {
				total = strings.Join(strings.Fields(l), " ")
			}
		}
		r.DiffS = append(r.DiffS, m.wall.Seconds())
		r.DiffWrites = append(r.DiffWrites, w1-w0-jobBookkeeping)
		r.DiffSummary = append(r.DiffSummary, total)
		log.Printf("    diff pass %.1fs, %d write commands besides the job's bookkeeping; %s (written, deleted, unchanged)", m.wall.Seconds(), w1-w0-jobBookkeeping, total)
		return nil
	}
	for i := range c.reps {
		r.Load = append(r.Load, loadAvg())
		first, second := verify, diff
		if i%2 == 1 {
			first, second = diff, verify
		}
		if err := first(); err != nil {
			return nil, err
		}
		if err := second(); err != nil {
			return nil, err
		}
	}
	r.Load = append(r.Load, loadAvg())
	med := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	r.VerifyMed, r.DiffMed = med(r.VerifyS), med(r.DiffS)
	for i := range r.DiffS {
		r.Pairs = append(r.Pairs, r.DiffS[i]/r.VerifyS[i])
	}
	r.Ratio = med(r.Pairs)
	_ = tdb.Drop(ctx)
	return r, dropDB(ctx, admin, name)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// syncChecks adds the sync benchmarks' targets.
func syncChecks(s *SyncReport, check func(goal, name string, v float64, target string, met bool)) {
	for _, r := range s.Ceiling {
		sc := fmt.Sprintf("SC %d customers: ", r.Customers)
		check("27.1", sc+"documents rebuilt/s at the ceiling / migrate's documents/s, same target", r.Ratio, ">= 0.5", r.Ratio >= 0.5)
		reached := false
		for _, st := range r.Steps {
			if st.Asked >= 2000 && st.Written >= 0.9*st.Asked {
				check("27.1", sc+"p99 lag (ms) at 2,000 source row changes/s", st.P99, "<= 1000", st.P99 <= 1000)
				reached = true
				break
			}
		}
		if !reached {
			// The goal's rate was not offered: the ceiling came first.
			check("27.1", sc+"ceiling (changes/s with p99 lag <= 2 s), for the goal of p99 <= 1 s at 2,000/s", r.CeilingChanges, ">= 2000", false)
		}
		if ir := r.Irrelevant; ir != nil {
			check("27.2", sc+"documents written by updates of unmapped columns at the ceiling rate", ir.Docs, "0", ir.Docs == 0 && ir.Skipped == float64(ir.Changes))
		}
	}
	if r := s.Copy; r != nil && r.Cores >= 4 && r.Speedup["4"] > 0 {
		// On fewer cores PostgreSQL, denorm and FerretDB share what
		// there is: the figure is reported, not checked.
		x := 1 / r.Speedup["4"]
		check("27.5", "SW: initial copy time with --workers 4 / 1 worker", x, "<= 0.35", x <= 0.35)
	}
	if d := s.Diff; d != nil {
		check("14", "SD: diff pass / verify, unchanged docs (median of rounds)", d.Ratio, "<= 1.2", d.Ratio <= 1.2)
		w := slices.Max(d.DiffWrites)
		check("14", "SD: document writes of a diff pass", float64(w), "0", w == 0)
	}
}

// printSync prints the sync benchmarks' figures.
func printSync(w io.Writer, s *SyncReport) {
	if s == nil {
		return
	}
	for _, r := range s.Ceiling {
		fmt.Fprintf(w, "SC sync ceiling, %d customers (median fan-out %.1f documents a change), FerretDB; migrate %.0f docs/s:\n", r.Customers, r.FanoutP50, r.MigrateDocsPerS)
		fmt.Fprintln(w, "   asked/s  written/s  docs/s  lag p50 ms  lag p99 ms  drain s  cpu s  load")
		for _, st := range r.Steps {
			fmt.Fprintf(w, "   %7.0f  %9.1f  %6.0f  %10.0f  %10.0f  %7.1f  %5s  %s\n", st.Asked, st.Written, st.DocsPerS, st.P50, st.P99, st.DrainS, st.CPU, st.Load)
		}
		fmt.Fprintf(w, "   ceiling %.0f changes/s, %.0f documents rebuilt/s = %.2fx migrate; bound: %s\n", r.CeilingChanges, r.CeilingDocs, r.Ratio, r.Bound)
		if ir := r.Irrelevant; ir != nil {
			fmt.Fprintf(w, "   unmapped column: %d updates at %.0f/s, %.0f skipped, %.0f documents written\n", ir.Changes, ir.Rate, ir.Skipped, ir.Docs)
		}
	}
	if len(s.Follow) > 0 {
		fmt.Fprintln(w, "SF sync --method logical --follow, person example into FerretDB, writes of one person each:")
		fmt.Fprintln(w, "   asked/s  written/s  applied/s  lag p50 ms  lag p99 ms  max ms  resolution ms  sync p50 ms  sync p99 ms  load")
		for _, r := range s.Follow {
			fmt.Fprintf(w, "   %7.0f  %9.1f  %9.1f  %10.0f  %10.0f  %6.0f  %13.0f  %11.0f  %11.0f  %s\n",
				r.AskedRate, r.WriteRate, r.Applied, r.LagP50, r.LagP99, r.LagMax, r.ResolutionMs, r.SyncP50, r.SyncP99, r.Load)
		}
	}
	printCopy(w, s.Copy)
	if d := s.Diff; d != nil {
		fmt.Fprintf(w, "SD %d unchanged documents: verify %v s (median %.1f), diff pass %v s (median %.1f): diff/verify by round %v, median %.2f; diff writes %v; load %v\n",
			d.Docs, roundAll(d.VerifyS), d.VerifyMed, roundAll(d.DiffS), d.DiffMed, roundAll(d.Pairs), d.Ratio, d.DiffWrites, d.Load)
	}
	fmt.Fprintln(w)
}

func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x*10) / 10
	}
	return out
}
