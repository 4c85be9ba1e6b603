package main

// Differential fuzzing (issue 25, section 2): random schemas, data and
// mappings from internal/difftest, each run through validate, migrate
// into a directory and into FerretDB, verify against both (and verify
// --oracle sql once the command has it), a rerun after the source's rows
// moved, verify against a tampered target, and invariants computed from
// the source by plain SQL. Every case must end exact or loud; a failure is
// shrunk to a small case and written under testdata/difftest/.
//
//	DENORM_DIFFTEST_TIME     how long TestDifftest draws cases (default 3m; 0 skips it)
//	DENORM_DIFFTEST_SEED     replay the one case of this seed (a case seed, printed on failure)
//	DENORM_DIFFTEST_MASTER   the master seed cases are drawn from (default: the clock)
//	DENORM_DIFFTEST_OPEN     known-open classes to draw too (comma-separated, or "all"; difftest.Classes)
//	DENORM_DIFFTEST_SHRINK   how long to shrink a failure (default 5m; 0: no shrinking)
//	DENORM_DIFFTEST_OUT      where shrunk failures go (default testdata/difftest)
//	DENORM_DIFFTEST_KEEP     keep going after a failure (count them all) when set
//
// Commands run in-process through run (cmd/denorm/main.go), as the golden
// tests run them.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/denorm/denorm/internal/difftest"
	"github.com/denorm/denorm/internal/testenv"
)

// dtFailure is a case that ended neither exact nor loud. Kind and Step
// are its signature: a shrunk case must fail with the same.
type dtFailure struct {
	Kind   string // panic, internal message, exit code, targets differ, ...
	Step   string // the step that showed it
	Detail string
}

func (f *dtFailure) Error() string { return f.Kind + " at " + f.Step + ": " + f.Detail }

func (f *dtFailure) signature() string { return f.Kind + "@" + f.Step }

// dtResult is how a case ended.
type dtResult struct {
	Outcome string // exact, refused, rejected; setup when the case's SQL failed
	Message string // the refusal, or the reject reasons
	Fail    *dtFailure
	Steps   []string // the steps run, for the statistics
	Times   map[string]time.Duration
}

// dtEnv is one test's servers: a source database whose schemas are
// emptied before each case, and the MongoDB-wire server.
type dtEnv struct {
	t       testing.TB
	admin   string // the source database as the superuser
	reader  string // the same as a role without BYPASSRLS
	mongo   string
	client  *mongo.Client
	n       atomic.Int64
	verify  bool // verify has --oracle
	workDir string
	cfg     difftest.Config
	// rowSecurity: the case's commands read with --row-security (the
	// case connects as a role row-level security applies to, and says
	// so); set per case (cases run one at a time).
	rowSecurity bool
}

func newDTEnv(t testing.TB) *dtEnv {
	t.Helper()
	db := testenv.PostgresDB(t)
	mongoURI := os.Getenv("DENORM_TEST_MONGO")
	client, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	e := &dtEnv{t: t, admin: db, mongo: mongoURI, client: client, workDir: t.TempDir(), verify: hasOracle()}
	if d := os.Getenv("DENORM_DIFFTEST_KEEPWORK"); d != "" {
		e.workDir = d
	}
	role := fmt.Sprintf("difftest_reader_%d", os.Getpid())
	testenv.Exec(t, db, fmt.Sprintf(`DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '%[1]s') THEN CREATE ROLE %[1]s LOGIN; END IF;
END $$;`, role))
	t.Cleanup(func() {
		ctx := context.Background()
		if c, err := pgx.Connect(ctx, db); err == nil {
			_, _ = c.Exec(ctx, "DROP OWNED BY "+role)
			c.Close(ctx)
		}
		if c, err := pgx.Connect(ctx, os.Getenv("DENORM_TEST_PG")); err == nil {
			_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+role)
			c.Close(ctx)
		}
	})
	u, _ := url.Parse(db)
	u.User = url.User(role)
	e.reader = u.String()
	return e
}

// hasOracle says whether verify takes --oracle (issue 25, section 1):
// the harness runs it once it exists.
func hasOracle() bool {
	var out bytes.Buffer
	root := newRootCmd(&globals{stdout: &out, stderr: &out})
	for _, c := range root.Commands() {
		if c.Name() == "verify" {
			return c.Flags().Lookup("oracle") != nil
		}
	}
	return false
}

// dtSchemas are the schemas a case may create; each case starts with
// them dropped.
const dtReset = `DROP SCHEMA IF EXISTS public, "s1", "Other Schema", "ünï" CASCADE;
CREATE SCHEMA public;
GRANT ALL ON SCHEMA public TO PUBLIC;`

// setup loads the case into the source.
func (e *dtEnv) setup(f *difftest.Files) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, e.admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, dtReset); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	if _, err := conn.Exec(ctx, f.Schema); err != nil {
		return fmt.Errorf("schema.sql: %w", err)
	}
	if _, err := conn.Exec(ctx, f.Data); err != nil {
		return fmt.Errorf("data.sql: %w", err)
	}
	if f.Meta.Role {
		u, _ := url.Parse(e.reader)
		role := u.User.Username()
		_, err := conn.Exec(ctx, fmt.Sprintf(`DO $$ DECLARE s text; BEGIN
  FOR s IN SELECT nspname FROM pg_namespace WHERE nspname IN ('public', 's1', 'Other Schema', 'ünï') LOOP
    EXECUTE format('GRANT USAGE ON SCHEMA %%I TO %[1]s', s);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %%I TO %[1]s', s);
  END LOOP;
END $$;`, role))
		if err != nil {
			return fmt.Errorf("reader role: %w", err)
		}
	}
	return nil
}

// internalText finds words of Go's internals in a message meant for a
// user: a panic, a type name, a formatting slip.
var internalText = regexp.MustCompile(`panic|runtime error|goroutine \d|nil pointer|index out of range|interface ?\{\}|\bmap\[|\[\]byte|\[\]uint8|\[\]interface|\*?\b(pgtype|pgconn|pgx|bson|primitive|reflect|strconv|transform|mappings|extract|load|pipeline|big|json|yaml)\.[A-Z]\w*|%!|<nil>|\.go:\d+|unexpected type|unsupported type \w+\.|cannot unmarshal|Go type`)

func checkWords(step, msg string) *dtFailure {
	if loc := internalText.FindStringIndex(msg); loc != nil {
		// the line holding the words, then the output
		start := strings.LastIndexByte(msg[:loc[0]], '\n') + 1
		end := loc[1] + strings.IndexByte(msg[loc[1]:]+"\n", '\n')
		return &dtFailure{Kind: "internal message", Step: step, Detail: fmt.Sprintf("%q in: %s\n--- output:\n%s", msg[loc[0]:loc[1]], abbrev(msg[start:end], 1500), abbrev(msg, 2000))}
	}
	return nil
}

// abbrev keeps the first n bytes of s and its end (where a command's
// final error is).
func abbrev(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*2/5, n*3/5
	return s[:head] + fmt.Sprintf("\n... (%d bytes) ...\n", len(s)-head-tail) + s[len(s)-tail:]
}

// cli runs one command line in-process; a panic on the calling
// goroutine is caught and reported as a failure.
func (e *dtEnv) cli(step string, args ...string) (code int, out string, fail *dtFailure) {
	var buf bytes.Buffer
	func() {
		defer func() {
			if r := recover(); r != nil {
				fail = &dtFailure{Kind: "panic", Step: step, Detail: fmt.Sprintf("%v\n%s", r, debug.Stack())}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if e.rowSecurity && len(args) > 0 && (args[0] == "validate" || args[0] == "migrate" || args[0] == "verify") {
			args = append(slices.Clone(args), "--row-security")
		}
		code = run(ctx, args, &buf, &buf)
	}()
	out = buf.String()
	if fail == nil {
		fail = checkWords(step, out)
	}
	return code, out, fail
}

// dtReject is one line of a reject file.
type dtReject struct {
	Collection string `json:"collection"`
	Source     string `json:"source"`
	Error      string `json:"error"`
}

func readRejectFile(path string) ([]dtReject, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []dtReject
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var r dtReject
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			return nil, fmt.Errorf("reject file line %q: %w", l, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// keySep joins a collection and a source in the keys rows are compared
// by (collection names may hold blanks).
const keySep = " \u2192 "

func rejectKeys(rs []dtReject) []string {
	var k []string
	for _, r := range rs {
		k = append(k, r.Collection+keySep+r.Source)
	}
	sort.Strings(k)
	return slices.Compact(k)
}

// runCase runs one case to its end.
func (e *dtEnv) runCase(f *difftest.Files) (res dtResult) {
	res.Times = map[string]time.Duration{}
	last, lastName := time.Now(), "setup"
	step := func(s string) {
		res.Times[lastName] += time.Since(last)
		last, lastName = time.Now(), s
		res.Steps = append(res.Steps, s)
	}
	defer func() { res.Times[lastName] += time.Since(last) }()
	fail := func(fl *dtFailure) dtResult { res.Fail = fl; return res }
	if err := e.setup(f); err != nil {
		res.Outcome, res.Message = "setup", err.Error()
		return res
	}
	n := e.n.Add(1)
	dir := filepath.Join(e.workDir, fmt.Sprintf("case%d", n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if os.Getenv("DENORM_DIFFTEST_KEEPWORK") == "" {
		defer os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "difftest: case work directory %s\n", dir)
	}
	mapping := filepath.Join(dir, "mapping.yaml")
	if err := os.WriteFile(mapping, []byte(f.Mapping), 0o644); err != nil {
		e.t.Fatal(err)
	}
	src := e.admin
	e.rowSecurity = false
	if f.Meta.Role {
		// a role row-level security applies to: refused, or (every
		// other seed) acknowledged with --row-security, when the checks
		// count what the role sees
		src = e.reader
		e.rowSecurity = f.Meta.Seed%2 == 0
	}
	bs := strconv.Itoa(max(f.Meta.BatchSize, 1))

	// validate: refusing is loud, if it says why in a user's words
	step("validate")
	code, out, fl := e.cli("validate", "validate", "--mapping", mapping, "--source", src)
	if fl != nil {
		return fail(fl)
	}
	switch code {
	case exitOK:
	case exitUsage:
		res.Outcome, res.Message = "refused", out
		return res
	default:
		return fail(&dtFailure{Kind: "exit code", Step: "validate", Detail: fmt.Sprintf("exit %d\n%s", code, abbrev(out, 4000))})
	}

	// migrate into a directory
	step("migrate dir")
	out1 := filepath.Join(dir, "out1")
	rej1 := filepath.Join(dir, "rejects1.jsonl")
	code, out, fl = e.cli("migrate dir", "migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--target", out1, "--rejects", rej1, "--batch-size", bs)
	if fl != nil {
		return fail(fl)
	}
	switch code {
	case exitOK, exitRejected:
	case exitUsage:
		res.Outcome, res.Message = "refused", out
		return res // validate passed, migrate refused: loud, counted apart
	default:
		return fail(&dtFailure{Kind: "exit code", Step: "migrate dir", Detail: fmt.Sprintf("exit %d\n%s", code, abbrev(out, 4000))})
	}
	rejects, err := readRejectFile(rej1)
	if err != nil {
		return fail(&dtFailure{Kind: "reject file", Step: "migrate dir", Detail: err.Error()})
	}
	if (code == exitRejected) != (len(rejects) > 0) {
		return fail(&dtFailure{Kind: "exit code and rejects disagree", Step: "migrate dir", Detail: fmt.Sprintf("exit %d with %d rejects\n%s", code, len(rejects), abbrev(out, 2000))})
	}
	for _, r := range rejects {
		if fl := checkWords("reject reason", r.Error); fl != nil {
			return fail(fl)
		}
		if r.Source == "" || r.Error == "" {
			return fail(&dtFailure{Kind: "reject without source or reason", Step: "migrate dir", Detail: fmt.Sprintf("%+v", r)})
		}
	}
	docs1, err := readDirDocs(out1)
	if err != nil {
		return fail(&dtFailure{Kind: "unreadable directory target", Step: "migrate dir", Detail: err.Error()})
	}

	// verify the directory: identical, but for the rejected rows
	step("verify dir")
	if fl := e.verifyAgrees("verify dir", mapping, src, out1, bs, rejects, nil, nil); fl != nil {
		return fail(fl)
	}
	if e.verify {
		step("oracle dir")
		if fl := e.verifyAgrees("oracle dir", mapping, src, out1, bs, rejects, nil, oracleArgs(f)); fl != nil {
			return fail(fl)
		}
	}

	// invariants from the source by plain SQL
	step("checks")
	if fl := e.checks(f, src, docs1, rejects); fl != nil {
		return fail(fl)
	}

	// FerretDB: the same documents, but for what FerretDB cannot store
	if f.Meta.Ferret {
		step("migrate ferret")
		dbName := fmt.Sprintf("difftest_%d_%d", os.Getpid(), n)
		u, _ := url.Parse(e.mongo)
		u.Path = "/" + dbName
		target := u.String()
		defer func() { _ = e.client.Database(dbName).Drop(context.Background()) }()
		rej2 := filepath.Join(dir, "rejects2.jsonl")
		code2, out, fl := e.cli("migrate ferret", "migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--target", target,
			"--rejects", rej2, "--batch-size", bs, "--workers", strconv.Itoa(max(f.Meta.Workers, 1)), "--retry-for", "3m")
		if fl != nil {
			return fail(fl)
		}
		// validate --target must say the same
		vcode, vout, fl := e.cli("validate ferret", "validate", "--mapping", mapping, "--source", src, "--target", target)
		if fl != nil {
			return fail(fl)
		}
		if (vcode == exitUsage) != (code2 == exitUsage) || (vcode != exitOK && vcode != exitUsage) {
			return fail(&dtFailure{Kind: "validate --target disagrees", Step: "validate ferret", Detail: fmt.Sprintf("validate --target exit %d, migrate exit %d\n%s\n%s", vcode, code2, abbrev(vout, 2000), abbrev(out, 2000))})
		}
		if code2 == exitUsage {
			// a refusal of what FerretDB cannot store: loud, the
			// directory's run stands
			if !strings.Contains(out, "cannot store") {
				return fail(&dtFailure{Kind: "exit code", Step: "migrate ferret", Detail: fmt.Sprintf("exit 2 without saying what the target cannot store\n%s", abbrev(out, 4000))})
			}
			res.Message = out
			goto rerun
		}
		if code2 != exitOK && code2 != exitRejected {
			return fail(&dtFailure{Kind: "exit code", Step: "migrate ferret", Detail: fmt.Sprintf("exit %d (directory: %d)\n%s", code2, code, abbrev(out, 4000))})
		}
		rejects2, err := readRejectFile(rej2)
		if err != nil {
			return fail(&dtFailure{Kind: "reject file", Step: "migrate ferret", Detail: err.Error()})
		}
		docs2, err := e.readServerDocs(dbName)
		if err != nil {
			return fail(&dtFailure{Kind: "unreadable server target", Step: "migrate ferret", Detail: err.Error()})
		}
		only, fl := compareDirServer(docs1, docs2, rejects, rejects2)
		if fl != nil {
			return fail(fl)
		}
		if only == nil {
			only = []dtReject{} // a server target: FerretDB's quirks are let pass
		}
		step("verify ferret")
		if fl := e.verifyAgrees("verify ferret", mapping, src, target, bs, rejects, only, nil); fl != nil {
			return fail(fl)
		}
		if e.verify {
			step("oracle ferret")
			if fl := e.verifyAgrees("oracle ferret", mapping, src, target, bs, rejects, only, oracleArgs(f)); fl != nil {
				return fail(fl)
			}
		}
	}

	// the same documents after every row moved on disk (a no-op update)
rerun:
	step("rerun after moving rows")
	if err := e.moveRows(f); err != nil {
		return fail(&dtFailure{Kind: "harness", Step: "move rows", Detail: err.Error()})
	}
	out3 := filepath.Join(dir, "out3")
	code3, out, fl := e.cli("migrate again", "migrate", "-q", "--progress", "none", "--mapping", mapping, "--source", src, "--target", out3, "--rejects", filepath.Join(dir, "rejects3.jsonl"), "--batch-size", bs)
	if fl != nil {
		return fail(fl)
	}
	if code3 != code {
		return fail(&dtFailure{Kind: "exit code", Step: "migrate again", Detail: fmt.Sprintf("exit %d, the first run %d\n%s", code3, code, abbrev(out, 2000))})
	}
	docs3, err := readDirDocs(out3)
	if err != nil {
		return fail(&dtFailure{Kind: "unreadable directory target", Step: "migrate again", Detail: err.Error()})
	}
	if d := diffDocSets(docs1, docs3, nil); d != "" {
		return fail(&dtFailure{Kind: "not deterministic", Step: "migrate again", Detail: "the rows' physical order changed the documents:\n" + d})
	}

	// verify must see a document changed behind its back
	step("verify tampered")
	if fl := e.tamper(mapping, src, out1, bs); fl != nil {
		return fail(fl)
	}

	res.Outcome = "exact"
	if len(rejects) > 0 {
		res.Outcome = "rejected"
		var msgs []string
		for _, r := range rejects {
			msgs = append(msgs, r.Collection+" "+r.Source+": "+r.Error)
		}
		res.Message = strings.Join(msgs, "\n")
	}
	return res
}

// verifyAgrees runs verify and requires its verdict to be the rejects:
// exit 0 when there are none, else exit 1 with exactly one unbuildable
// difference per rejected row, plus (server target) a missing document
// for each row only the server refused.
func (e *dtEnv) verifyAgrees(step, mapping, src, target, bs string, rejects []dtReject, serverOnly []dtReject, extra []string) *dtFailure {
	report := filepath.Join(filepath.Dir(mapping), strings.ReplaceAll(step, " ", "-")+".json")
	args := append([]string{"verify", "--mapping", mapping, "--source", src, "--target", target, "--report", report, "--batch-size", bs, "--show", "5"}, extra...)
	code, out, fl := e.cli(step, args...)
	if fl != nil {
		return fl
	}
	want := exitOK
	if len(rejects)+len(serverOnly) > 0 {
		want = exitRuntime
	}
	if code == exitRuntime && want == exitOK && (serverOnly != nil || extra != nil) && strings.Contains(out, "different") {
		want = exitRuntime // FerretDB's quirks or an open finding, if the report shows only those
	}
	if code != want {
		return &dtFailure{Kind: "verify verdict", Step: step, Detail: fmt.Sprintf("exit %d, want %d (%d rejected rows, %d refused by the server)\n%s", code, want, len(rejects), len(serverOnly), abbrev(out, 6000))}
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return &dtFailure{Kind: "verify report", Step: step, Detail: err.Error()}
	}
	var rep struct {
		Differences []struct {
			Collection string          `json:"collection"`
			ID         json.RawMessage `json:"_id"`
			Kind       string          `json:"kind"`
			Source     string          `json:"source"`
			Fields     []dtFieldDiff   `json:"fields"`
		} `json:"differences"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return &dtFailure{Kind: "verify report", Step: step, Detail: err.Error()}
	}
	var unbuildable, missing []string
	for _, d := range rep.Differences {
		switch d.Kind {
		case "unbuildable":
			unbuildable = append(unbuildable, d.Collection+keySep+d.Source)
		case "missing":
			missing = append(missing, d.Collection+keySep+d.Source)
		case "different":
			if serverOnly != nil && ferretQuirks(d.Fields) {
				continue
			}
			fallthrough
		default:
			return &dtFailure{Kind: "verify verdict", Step: step, Detail: fmt.Sprintf("a %s difference where the target should hold what the source gives: %s _id=%s (%s)\n%s", d.Kind, d.Collection, d.ID, d.Source, abbrev(out, 4000))}
		}
	}
	sort.Strings(unbuildable)
	sort.Strings(missing)
	if extra != nil {
		// the oracle names rows by its own SQL (dates, numbers, in
		// PostgreSQL's text): the same rows per collection is what counts
		unbuildable, missing = perCollection(unbuildable), perCollection(missing)
		rejects, serverOnly = rejectsPerCollection(rejects), rejectsPerCollection(serverOnly)
	}
	if w := rejectKeys(rejects); !slices.Equal(slices.Compact(unbuildable), w) {
		var only1, only2 []string
		for _, u := range slices.Compact(unbuildable) {
			if !slices.Contains(w, u) {
				only1 = append(only1, u)
			}
		}
		for _, r := range w {
			if !slices.Contains(unbuildable, r) {
				only2 = append(only2, r)
			}
		}
		return &dtFailure{Kind: "verify disagrees with the rejects", Step: step, Detail: fmt.Sprintf("unbuildable, not rejected: %q\nrejected, not unbuildable: %q\n%s", only1, only2, abbrev(out, 3000))}
	}
	if w := rejectKeys(serverOnly); !slices.Equal(slices.Compact(missing), w) {
		return &dtFailure{Kind: "verify disagrees with the rejects", Step: step, Detail: fmt.Sprintf("missing             %q\nrefused by server   %q", missing, w)}
	}
	return nil
}

// dtFieldDiff is a field difference of verify's report.
type dtFieldDiff struct {
	Path     string          `json:"path"`
	Expected json.RawMessage `json:"expected"`
	Found    json.RawMessage `json:"found"`
	Note     string          `json:"note"`
}

// ferretQuirks says whether every field difference is one FerretDB 1.24
// makes to any document it stores: an embedded document's _id moved
// first, a -0.0 stored as 0.0.
func ferretQuirks(fields []dtFieldDiff) bool {
	if len(fields) == 0 {
		return false
	}
	for _, f := range fields {
		switch {
		case strings.HasPrefix(f.Note, "field order differs: expected ") && strings.Contains(f.Note, ", found _id,") && f.Path != "":
		case string(f.Expected) == "-0.0" && string(f.Found) == "0.0":
		default:
			return false
		}
	}
	return true
}

// oracleArgs are verify's flags for the oracle: its parts follow the
// case's number of workers (1 to 3).
func oracleArgs(f *difftest.Files) []string {
	return []string{"--oracle", "sql", "--oracle-workers", strconv.Itoa(max(f.Meta.Workers, 1))}
}

// perCollection replaces "collection source" entries by one
// "collection: N rows" entry per collection.
func perCollection(keys []string) []string {
	n := map[string]int{}
	for _, k := range slices.Compact(slices.Clone(keys)) {
		c, _, _ := strings.Cut(k, keySep)
		n[c]++
	}
	var out []string
	for c, k := range n {
		out = append(out, fmt.Sprintf("%s%s%d rows", c, keySep, k))
	}
	sort.Strings(out)
	return out
}

// rejectsPerCollection is perCollection for rejects (as rejects whose
// source is the count).
func rejectsPerCollection(rs []dtReject) []dtReject {
	var out []dtReject
	for _, k := range perCollection(rejectKeys(rs)) {
		c, n, _ := strings.Cut(k, keySep)
		out = append(out, dtReject{Collection: c, Source: n})
	}
	return out
}

// dtDoc is one document in canonical form, by _id.
type dtDoc struct {
	ID   string
	Text string
	Raw  bson.Raw
}

// readDirDocs reads every <collection>.jsonl of a directory target.
func readDirDocs(dir string) (map[string][]dtDoc, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	out := map[string][]dtDoc{}
	for _, file := range files {
		coll := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		out[coll] = []dtDoc{}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var raw bson.Raw
			if err := bson.UnmarshalExtJSON([]byte(line), false, &raw); err != nil {
				return nil, fmt.Errorf("%s: %w: %s", file, err, abbrev(line, 300))
			}
			out[coll] = append(out[coll], canonDoc(raw))
		}
		sortDocs(out[coll])
	}
	return out, nil
}

// readServerDocs reads every collection of a server database but the
// checkpoints.
func (e *dtEnv) readServerDocs(db string) (map[string][]dtDoc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	names, err := e.client.Database(db).ListCollectionNames(ctx, bson.D{})
	if err != nil {
		return nil, err
	}
	out := map[string][]dtDoc{}
	for _, name := range names {
		if name == "_denorm" {
			continue
		}
		cur, err := e.client.Database(db).Collection(name).Find(ctx, bson.D{})
		if err != nil {
			return nil, err
		}
		out[name] = []dtDoc{}
		for cur.Next(ctx) {
			out[name] = append(out[name], canonDoc(slices.Clone(cur.Current)))
		}
		if err := cur.Err(); err != nil {
			return nil, err
		}
		_ = cur.Close(ctx)
		sortDocs(out[name])
	}
	return out, nil
}

func sortDocs(d []dtDoc) {
	slices.SortStableFunc(d, func(a, b dtDoc) int { return cmp.Compare(a.ID, b.ID) })
}

// canonDoc writes a document so that two are equal exactly when their
// fields, in order, hold equal values, numbers compared by value (a
// directory's Extended JSON keeps no int32 apart from int64, and FerretDB
// keeps an earlier number type on a replace).
func canonDoc(raw bson.Raw) dtDoc {
	var b strings.Builder
	canonValue(&b, bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: raw})
	id := ""
	if v, err := raw.LookupErr("_id"); err == nil {
		var ib strings.Builder
		canonValue(&ib, v)
		id = ib.String()
	}
	return dtDoc{ID: id, Text: b.String(), Raw: raw}
}

func canonValue(b *strings.Builder, v bson.RawValue) { canonValueOpt(b, v, false, true) }

// canonValueOpt is canonValue; ferret writes what FerretDB stores of the
// value: an embedded document's _id field first, -0 as 0 (FerretDB does
// that to every document it stores).
func canonValueOpt(b *strings.Builder, v bson.RawValue, ferret, top bool) {
	switch v.Type {
	case bson.TypeEmbeddedDocument, bson.TypeArray:
		open, close := "{", "}"
		if v.Type == bson.TypeArray {
			open, close = "[", "]"
		}
		b.WriteString(open)
		elems, _ := bson.Raw(v.Value).Elements()
		if ferret && !top && v.Type == bson.TypeEmbeddedDocument {
			slices.SortStableFunc(elems, func(x, y bson.RawElement) int {
				return boolInt(y.Key() == "_id") - boolInt(x.Key() == "_id")
			})
		}
		for i, el := range elems {
			if i > 0 {
				b.WriteByte(',')
			}
			if v.Type == bson.TypeEmbeddedDocument {
				k, _ := json.Marshal(el.Key())
				b.Write(k)
				b.WriteByte(':')
			}
			canonValueOpt(b, el.Value(), ferret, false)
		}
		b.WriteString(close)
	case bson.TypeInt32:
		b.WriteString(strconv.FormatInt(int64(v.Int32()), 10))
	case bson.TypeInt64:
		b.WriteString(strconv.FormatInt(v.Int64(), 10))
	case bson.TypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			b.WriteString("NaN")
		case f == math.Trunc(f) && math.Abs(f) < 1<<63:
			if f == 0 && math.Signbit(f) && !ferret {
				b.WriteString("-0")
			} else {
				b.WriteString(strconv.FormatInt(int64(f), 10))
			}
		default:
			b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
		}
	case bson.TypeString:
		s, _ := json.Marshal(v.StringValue())
		b.Write(s)
	case bson.TypeBinary:
		sub, data := v.Binary()
		fmt.Fprintf(b, "bin%d:%s", sub, hex.EncodeToString(data))
	case bson.TypeDateTime:
		fmt.Fprintf(b, "date:%d", v.DateTime())
	case bson.TypeBoolean:
		fmt.Fprint(b, v.Boolean())
	case bson.TypeNull:
		b.WriteString("null")
	case bson.TypeDecimal128:
		b.WriteString("dec:" + v.Decimal128().String())
	default:
		fmt.Fprintf(b, "%s:%s", v.Type, v.String())
	}
}

// diffDocSets describes how two targets' documents differ ("" when they
// hold the same), leaving out the collections and _ids in skip.
func diffDocSets(a, b map[string][]dtDoc, skip map[string]bool) string {
	var out []string
	colls := map[string]bool{}
	for c := range a {
		colls[c] = true
	}
	for c := range b {
		colls[c] = true
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for c := range colls {
			if !yield(c) {
				return
			}
		}
	})
	for _, c := range names {
		da, db := a[c], b[c]
		ia := map[string][]string{}
		for _, d := range da {
			if !skip[c+" "+d.ID] {
				ia[d.ID] = append(ia[d.ID], d.Text)
			}
		}
		ib := map[string][]string{}
		for _, d := range db {
			if !skip[c+" "+d.ID] {
				ib[d.ID] = append(ib[d.ID], d.Text)
			}
		}
		for id, x := range ia {
			y := ib[id]
			if !slices.Equal(x, y) {
				out = append(out, fmt.Sprintf("%s _id=%s:\n  first:  %s\n  second: %s", c, abbrev(id, 200), abbrev(strings.Join(x, " | "), 1500), abbrev(strings.Join(y, " | "), 1500)))
			}
		}
		for id, y := range ib {
			if _, ok := ia[id]; !ok {
				out = append(out, fmt.Sprintf("%s _id=%s: only in the second: %s", c, abbrev(id, 200), abbrev(strings.Join(y, " | "), 1500)))
			}
		}
	}
	sort.Strings(out)
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("... and %d more", len(out)-8))
	}
	return strings.Join(out, "\n")
}

// serverRefusal says whether a reject reason is FerretDB refusing a
// document the directory holds (what the README's Known limitations
// lists: NaN doubles, nested arrays, Decimal128 made by data).
var serverRefusal = regexp.MustCompile(`(?i)target|server|refus|decimal`)

// compareDirServer requires the directory and the server to hold the same
// documents and reject the same rows, but for documents the server
// refused: those it returns (rejected on the server only), for verify.
func compareDirServer(dir, server map[string][]dtDoc, rejDir, rejServer []dtReject) ([]dtReject, *dtFailure) {
	// rows compared as a multiset of (collection, source, reason): one
	// source row may be rejected by two document types of a shared
	// collection, for different reasons
	key := func(r dtReject) string { return r.Collection + keySep + r.Source + keySep + r.Error }
	left := map[string]int{}
	for _, r := range rejDir {
		left[key(r)]++
	}
	var only []dtReject
	for _, r := range rejServer {
		if left[key(r)] > 0 {
			left[key(r)]--
			continue
		}
		if !serverRefusal.MatchString(r.Error) {
			return nil, &dtFailure{Kind: "rejects differ", Step: "migrate ferret", Detail: fmt.Sprintf("rejected on the server only, for a reason the directory should share: %+v", r)}
		}
		only = append(only, r)
	}
	for k, n := range left {
		if n > 0 {
			return nil, &dtFailure{Kind: "rejects differ", Step: "migrate ferret", Detail: "rejected in the directory only: " + k}
		}
	}
	// documents refused by the server: leave them out of the comparison
	// when the directory's document holds what FerretDB cannot store
	skip := map[string]bool{}
	if len(only) > 0 {
		for c, docs := range dir {
			serverIDs := map[string]bool{}
			for _, d := range server[c] {
				serverIDs[d.ID] = true
			}
			for _, d := range docs {
				if !serverIDs[d.ID] && ferretCannotStore(d.Raw) {
					skip[c+" "+d.ID] = true
				}
			}
		}
	}
	if d := diffDocSets(ferretView(dir), ferretView(server), skip); d != "" {
		return nil, &dtFailure{Kind: "targets differ", Step: "migrate ferret", Detail: "directory (first) and FerretDB (second):\n" + d}
	}
	return only, nil
}

// ferretView rewrites documents as FerretDB stores them: every embedded
// document's _id first, -0 as 0.
func ferretView(docs map[string][]dtDoc) map[string][]dtDoc {
	out := map[string][]dtDoc{}
	for c, ds := range docs {
		for _, d := range ds {
			var b strings.Builder
			canonValueOpt(&b, bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: d.Raw}, true, true)
			out[c] = append(out[c], dtDoc{ID: d.ID, Text: b.String(), Raw: d.Raw})
		}
	}
	return out
}

// ferretCannotStore says whether a document holds a value FerretDB 1.24
// refuses: a NaN or infinite double, an array directly inside an array,
// a Decimal128.
func ferretCannotStore(raw bson.Raw) bool {
	var walk func(v bson.RawValue, inArray bool) bool
	walk = func(v bson.RawValue, inArray bool) bool {
		switch v.Type {
		case bson.TypeDouble:
			return math.IsNaN(v.Double()) || math.IsInf(v.Double(), 0)
		case bson.TypeDecimal128:
			return true
		case bson.TypeArray, bson.TypeEmbeddedDocument:
			if v.Type == bson.TypeArray && inArray {
				return true
			}
			elems, _ := bson.Raw(v.Value).Elements()
			for _, el := range elems {
				if walk(el.Value(), v.Type == bson.TypeArray) {
					return true
				}
			}
		}
		return false
	}
	return walk(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: raw}, false)
}

// checks compares the case's invariants (SQL over the source) with the
// directory's documents; a collection with rejected rows is left out.
func (e *dtEnv) checks(f *difftest.Files, src string, docs map[string][]dtDoc, rejects []dtReject) *dtFailure {
	rejected := map[string]bool{}
	for _, r := range rejects {
		rejected[r.Collection] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, src) // as the source role: what it may see
	if err != nil {
		return &dtFailure{Kind: "harness", Step: "checks", Detail: err.Error()}
	}
	defer conn.Close(ctx)
	for _, c := range f.Meta.Checks {
		if rejected[c.Collection] {
			continue
		}
		rows, err := conn.Query(ctx, "SELECT (x)::text FROM ("+c.SQL+") s(x)")
		if err != nil {
			return &dtFailure{Kind: "harness", Step: "checks", Detail: fmt.Sprintf("%s: %v", c.SQL, err)}
		}
		var want []string
		for rows.Next() {
			var s *string
			if err := rows.Scan(&s); err != nil {
				rows.Close()
				return &dtFailure{Kind: "harness", Step: "checks", Detail: err.Error()}
			}
			if s == nil {
				want = append(want, "null")
			} else {
				want = append(want, *s)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return &dtFailure{Kind: "harness", Step: "checks", Detail: fmt.Sprintf("%s: %v", c.SQL, err)}
		}
		var got []string
		if c.Field == "" {
			got = []string{strconv.Itoa(len(docs[c.Collection]))}
		} else {
			for _, d := range docs[c.Collection] {
				v, err := d.Raw.LookupErr(c.Field)
				switch {
				case err != nil:
					got = append(got, "absent")
				case v.Type == bson.TypeArray:
					vals, _ := v.Array().Values()
					got = append(got, strconv.Itoa(len(vals)))
				default:
					var b strings.Builder
					canonValue(&b, v)
					got = append(got, b.String())
				}
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(want, got) {
			return &dtFailure{Kind: "invariant", Step: "checks", Detail: fmt.Sprintf("%s %s of %s: the source says %v, the documents %v\nSQL: %s", c.What, c.Field, c.Collection, abbrevList(want), abbrevList(got), c.SQL)}
		}
	}
	return nil
}

func abbrevList(s []string) string {
	if len(s) > 30 {
		return fmt.Sprintf("%v ... (%d)", s[:30], len(s))
	}
	return fmt.Sprint(s)
}

// moveRows rewrites rows of every table (a no-op update), which moves
// them to the table's end: a result that depended on physical order
// changes.
func (e *dtEnv) moveRows(f *difftest.Files) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, e.admin)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT format('%I.%I', n.nspname, c.relname), (SELECT format('%I', a.attname) FROM pg_attribute a
  WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum DESC LIMIT 1)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r') AND n.nspname IN ('public', 's1', 'Other Schema', 'ünï')`)
	if err != nil {
		return err
	}
	var stmts []string
	for rows.Next() {
		var tbl string
		var col *string
		if err := rows.Scan(&tbl, &col); err != nil {
			rows.Close()
			return err
		}
		if col != nil {
			// two passes, each moving the rows of half the hashes of
			// their place to the table's end: the order changes
			for _, bit := range []int{1, 2} {
				stmts = append(stmts, fmt.Sprintf("UPDATE ONLY %s SET %s = %s WHERE (hashtext(ctid::text) & %d) = 0", tbl, *col, *col, bit))
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	sort.Strings(stmts)
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// tamper changes one document of a copy of the directory target and
// requires verify to find exactly that one.
func (e *dtEnv) tamper(mapping, src, out1, bs string) *dtFailure {
	files, _ := filepath.Glob(filepath.Join(out1, "*.jsonl"))
	sort.Strings(files)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil || len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		i := len(lines) / 2
		var doc bson.D
		if err := bson.UnmarshalExtJSON([]byte(lines[i]), false, &doc); err != nil {
			return &dtFailure{Kind: "unreadable directory target", Step: "tamper", Detail: err.Error()}
		}
		changed := false
		for k := len(doc) - 1; k > 0 && !changed; k-- {
			switch x := doc[k].Value.(type) {
			case string:
				doc[k].Value, changed = x+"~", true
			case int32:
				doc[k].Value, changed = x^1, true
			case int64:
				doc[k].Value, changed = x^1, true
			case bool:
				doc[k].Value, changed = !x, true
			}
		}
		if !changed {
			doc = append(doc, bson.E{Key: "tampered", Value: int32(1)})
		}
		nb, err := bson.MarshalExtJSON(doc, false, false)
		if err != nil {
			return &dtFailure{Kind: "harness", Step: "tamper", Detail: err.Error()}
		}
		lines[i] = string(nb)
		if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return &dtFailure{Kind: "harness", Step: "tamper", Detail: err.Error()}
		}
		code, out, fl := e.cli("verify tampered", "verify", "--mapping", mapping, "--source", src, "--target", out1, "--batch-size", bs, "--show", "3")
		if fl != nil {
			return fl
		}
		if code != exitRuntime {
			return &dtFailure{Kind: "verify blind", Step: "verify tampered", Detail: fmt.Sprintf("one document of %s changed (%s), verify exit %d\n%s", filepath.Base(file), abbrev(lines[i], 500), code, abbrev(out, 3000))}
		}
		return nil
	}
	return nil
}

// dtConfig reads the generator's switches from the environment: every
// class is drawn but those difftest.Closed lists (open findings), plus
// DENORM_DIFFTEST_OPEN's, less DENORM_DIFFTEST_CLOSE's.
func dtConfig(t testing.TB) difftest.Config {
	cfg := difftest.Config{Open: map[string]bool{}}
	for k := range difftest.Classes {
		cfg.Open[k] = !difftest.Closed[k]
	}
	for _, env := range []string{"DENORM_DIFFTEST_OPEN", "DENORM_DIFFTEST_CLOSE"} {
		for _, c := range strings.Split(os.Getenv(env), ",") {
			c = strings.TrimSpace(c)
			switch {
			case c == "":
			case c == "all":
				for k := range difftest.Classes {
					cfg.Open[k] = env == "DENORM_DIFFTEST_OPEN"
				}
			case difftest.Classes[c] != "":
				cfg.Open[c] = env == "DENORM_DIFFTEST_OPEN"
			default:
				t.Fatalf("%s: unknown class %q (known: %v)", env, c, slices.Sorted(mapKeys(difftest.Classes)))
			}
		}
	}
	return cfg
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func envDuration(t testing.TB, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

// TestDifftest draws cases for DENORM_DIFFTEST_TIME (default 3 minutes)
// and requires each to end exact or loud; DENORM_DIFFTEST_SEED replays
// one case.
func TestDifftest(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	budget := envDuration(t, "DENORM_DIFFTEST_TIME", 3*time.Minute)
	one := os.Getenv("DENORM_DIFFTEST_SEED")
	if budget <= 0 && one == "" {
		t.Skip("DENORM_DIFFTEST_TIME=0")
	}
	cfg := dtConfig(t)
	e := newDTEnv(t)
	e.cfg = cfg
	if one != "" {
		seed, err := strconv.ParseUint(one, 10, 64)
		if err != nil {
			t.Fatalf("DENORM_DIFFTEST_SEED=%q: %v", one, err)
		}
		e.fuzzOne(t, seed, cfg, true)
		return
	}
	master := uint64(time.Now().UnixNano())
	if s := os.Getenv("DENORM_DIFFTEST_MASTER"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DENORM_DIFFTEST_MASTER=%q: %v", s, err)
		}
		master = v
	}
	// printed at once: a crash of the test binary (a panic on another
	// goroutine) still leaves the seed that replays it
	fmt.Fprintf(os.Stderr, "difftest: master seed %d for %v (replay the run with DENORM_DIFFTEST_MASTER=%[1]d)\n", master, budget)
	r := rand.New(rand.NewPCG(master, 0))
	end := time.Now().Add(budget)
	st := &dtStats{outcomes: map[string]int{}, notes: map[string]int{}, refusals: map[string]int{}, steps: map[string]int{}}
	failures := 0
	for time.Now().Before(end) {
		seed := r.Uint64() >> 1
		if os.Getenv("DENORM_DIFFTEST_VERBOSE") != "" {
			fmt.Fprintf(os.Stderr, "difftest: case seed %d\n", seed)
		}
		res, ok := e.fuzzOne(t, seed, cfg, false)
		st.add(res, seed)
		if !ok {
			failures++
			if os.Getenv("DENORM_DIFFTEST_KEEP") == "" {
				break
			}
		}
	}
	st.log(t, master)
	if failures > 0 {
		t.Errorf("%d of %d cases failed (seeds above)", failures, st.cases)
	}
}

// dtFerretBugs are failures FerretDB 1.24 causes that denorm cannot see
// coming (it accepts what it cannot read back) or that are recorded as
// open in the fuzzing note: counted as "ferret bug", not failed, unless
// DENORM_DIFFTEST_OPEN names "ferret".
var dtFerretBugs = []struct{ what, re string }{
	// a control character in a field name is stored, then fails every
	// read of the collection (sjson.Unmarshal: invalid character '\x01')
	{"control character in a field name", `invalid character '\\(x[0-9a-f]{2}|[tnrfbv])' in string literal`},
	// a top-level field name holding '"' made by the data (a root-level
	// pivot): the whole insert fails (open: denorm could reject the row)
	{"double quote in a top-level name from data", `malformed JSON`},
	// an infinite double inside an array (at the top of a document it is
	// a write error, and the row is rejected): InternalError, the run fails
	{"infinity inside an array", `json: unsupported value: [-+]?Inf`},
}

// ferretBug names the FerretDB bug fl shows, or "".
func ferretBug(fl *dtFailure) string {
	if fl == nil || !strings.Contains(fl.Step, "ferret") {
		return ""
	}
	for _, b := range dtFerretBugs {
		if regexp.MustCompile(b.re).MatchString(fl.Detail) {
			return b.what
		}
	}
	return ""
}

// fuzzOne runs the case of seed; on a failure it shrinks it, writes it
// out and fails the test.
func (e *dtEnv) fuzzOne(t *testing.T, seed uint64, cfg difftest.Config, verbose bool) (dtResult, bool) {
	c := difftest.Generate(seed, cfg)
	f := c.Files()
	res := e.runCase(f)
	if b := ferretBug(res.Fail); b != "" && !cfg.Open["ferret"] {
		res.Outcome, res.Message, res.Fail = "ferret bug", b, nil
	}
	if verbose {
		t.Logf("seed %d: %s %s\nsteps %v\nnotes %v\n%s", seed, res.Outcome, abbrev(res.Message, 2000), res.Steps, f.Meta.Notes, f.Mapping)
	}
	if res.Fail == nil {
		return res, true
	}
	t.Errorf("case seed %d failed: %v\nreplay: DENORM_DIFFTEST_SEED=%d go test -count=1 -run '^TestDifftest$' ./cmd/denorm", seed, res.Fail, seed)
	sig := res.Fail.signature()
	small := c
	if d := envDuration(t, "DENORM_DIFFTEST_SHRINK", 5*time.Minute); d > 0 {
		tries := 0
		small = difftest.Shrink(c, func(x *difftest.Case) bool {
			tries++
			r := e.runCase(x.Files())
			return r.Fail != nil && r.Fail.signature() == sig
		}, time.Now().Add(d))
		t.Logf("shrunk in %d runs", tries)
	}
	sf := small.Files()
	sf.Meta.Notes = nil // drawn for the whole case, not the shrunk one
	last := e.runCase(sf)
	out := os.Getenv("DENORM_DIFFTEST_OUT")
	if out == "" {
		out = repoPath(t, "testdata", "difftest")
	}
	name := fmt.Sprintf("seed-%d", seed)
	sf.Meta.Expect = &difftest.Expect{Found: fmt.Sprintf("%v", last.Fail)}
	if err := sf.Write(filepath.Join(out, name)); err != nil {
		t.Errorf("writing the shrunk case: %v", err)
	} else {
		t.Logf("shrunk case written to %s; its failure: %v\nmapping:\n%s", filepath.Join(out, name), last.Fail, sf.Mapping)
	}
	return res, false
}

// dtStats counts a run's cases.
type dtStats struct {
	cases    int
	outcomes map[string]int
	notes    map[string]int
	refusals map[string]int
	examples map[string]uint64 // a seed per refusal
	steps    map[string]int
	times    map[string]time.Duration
	setup    []string
}

var refusalLine = regexp.MustCompile(`mapping\.yaml:\d+:\d+: ([^\n]*)`)

func (s *dtStats) add(r dtResult, seed uint64) {
	s.cases++
	o := r.Outcome
	if r.Fail != nil {
		o = "FAILED"
	}
	s.outcomes[o]++
	for _, st := range r.Steps {
		s.steps[st]++
	}
	if s.times == nil {
		s.times = map[string]time.Duration{}
	}
	for k, d := range r.Times {
		s.times[k] += d
	}
	switch r.Outcome {
	case "refused":
		if s.examples == nil {
			s.examples = map[string]uint64{}
		}
		for _, m := range refusalLine.FindAllStringSubmatch(r.Message, -1) {
			s.refusals[shape(m[1])]++
			s.examples[shape(m[1])] = seed
		}
		if !refusalLine.MatchString(r.Message) {
			s.refusals[shape(finalLine(r.Message))]++
			s.examples[shape(finalLine(r.Message))] = seed
		}
	case "setup":
		if len(s.setup) < 10 {
			s.setup = append(s.setup, fmt.Sprintf("seed %d: %s", seed, abbrev(r.Message, 300)))
		}
	}
}

func finalLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// shape is a message with its quoted names and numbers blanked, to count
// refusals by kind.
var quoted = regexp.MustCompile(`"[^"]*"|'[^']*'|\d+`)

func shape(m string) string {
	m = quoted.ReplaceAllString(m, "_")
	if len(m) > 140 {
		m = m[:140] + "..."
	}
	return m
}

func (s *dtStats) log(t *testing.T, master uint64) {
	var b strings.Builder
	fmt.Fprintf(&b, "difftest: %d cases (master seed %d): %v\nsteps reached: %v\n", s.cases, master, s.outcomes, s.steps)
	var times []string
	for k, d := range s.times {
		times = append(times, fmt.Sprintf("%s %.1fs", k, d.Seconds()))
	}
	sort.Strings(times)
	fmt.Fprintf(&b, "time per step: %s\n", strings.Join(times, ", "))
	type kv struct {
		k string
		n int
	}
	var rs []kv
	for k, n := range s.refusals {
		rs = append(rs, kv{k, n})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].n > rs[j].n })
	for i, r := range rs {
		if i == 25 {
			break
		}
		fmt.Fprintf(&b, "  refused %4d  %s (seed %d)\n", r.n, r.k, s.examples[r.k])
	}
	for _, s := range s.setup {
		fmt.Fprintf(&b, "  setup failed: %s\n", s)
	}
	t.Log(b.String())
}

// TestDifftestCases replays every case under testdata/difftest/: each
// must end as its case.json expects.
func TestDifftestCases(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	root := repoPath(t, "testdata", "difftest")
	if d := os.Getenv("DENORM_DIFFTEST_CASES"); d != "" {
		root = d
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "case.json"))
	if len(dirs) == 0 {
		t.Skip("no cases under testdata/difftest")
	}
	e := newDTEnv(t)
	e.cfg = dtConfig(t)
	for _, p := range dirs {
		dir := filepath.Dir(p)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			f, err := difftest.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			exp := f.Meta.Expect
			if exp == nil {
				exp = &difftest.Expect{}
			}
			// an open case runs with its class open: no leniency for it
			cfg := dtConfig(t)
			if exp.Open != "" {
				cfg.Open[exp.Open] = true
			}
			e.cfg = cfg
			res := e.runCase(f)
			switch {
			case res.Fail != nil && exp.Open != "":
				t.Skipf("open: class %s (%s) still fails: %v", exp.Open, difftest.Classes[exp.Open], res.Fail)
			case res.Fail != nil:
				t.Fatalf("%v\n(found: %s)", res.Fail, exp.Found)
			case res.Outcome == "setup":
				t.Fatalf("the case's SQL failed: %s", res.Message)
			case exp.Outcome != "" && res.Outcome != exp.Outcome:
				t.Errorf("outcome %s, want %s\n%s", res.Outcome, exp.Outcome, abbrev(res.Message, 3000))
			case exp.Message != "" && !strings.Contains(res.Message, exp.Message):
				t.Errorf("the %s case does not say %q:\n%s", res.Outcome, exp.Message, abbrev(res.Message, 3000))
			}
			if exp.Open != "" && res.Fail == nil {
				t.Logf("class %s no longer fails here: set expect.outcome (%s) and drop expect.open", exp.Open, res.Outcome)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
