package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/job"
	"github.com/denorm/denorm/load"
)

// secretRun collects what a test's commands printed and wrote.
type secretRun struct {
	t      *testing.T
	dir    string
	texts  map[string]string // name -> text, every output to check
	n      int
	server []*mongo.Database // server targets whose _denorm is checked too
}

// cli runs one command line in-process, checks its exit code and keeps
// stdout and stderr.
func (r *secretRun) cli(want int, args ...string) string {
	r.t.Helper()
	code, out, errs := runCLI(r.t, args...)
	r.n++
	r.texts[fmt.Sprintf("%d: denorm %s (stdout)", r.n, strings.Join(args, " "))] = out
	r.texts[fmt.Sprintf("%d: denorm %s (stderr)", r.n, strings.Join(args, " "))] = errs
	if code != want {
		r.t.Fatalf("denorm %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out + errs
}

// collect adds every file under the test's directory (reports, rejects,
// checkpoints, drafted mappings, target files) and the checkpoints of the
// server targets.
func (r *secretRun) collect() {
	r.t.Helper()
	err := filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		r.texts["file "+p] = string(b)
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, db := range r.server {
		r.texts["checkpoints in "+db.Name()] = strings.Join(testenv.DumpCollection(r.t, db, load.RecordCollection), "\n")
	}
}

// garbled is a mask glued to other letters: the sign of a password
// replaced inside other words.
var garbled = regexp.MustCompile(`[A-Za-z0-9_]xxxxx|xxxxx[A-Za-z0-9_]`)

// check fails on any output that holds the password: in its place in a
// URL or keyword (raw and encoded), and anywhere at all when it is long
// enough to be told apart from ordinary text; and on a mask that garbles
// other text, or that shows a user name masked as if it were the password.
func (r *secretRun) check(role, pw string) {
	r.t.Helper()
	enc := url.UserPassword(role, pw).String() // role:ENCODED
	forbidden := []string{
		role + ":" + pw + "@", enc + "@",
		"password=" + pw, "password=" + url.QueryEscape(pw), "password='" + pw,
		"xxxxx:xxxxx@", "user=xxxxx", `"xxxxx"`,
	}
	if len(pw) >= 6 && pw != role {
		forbidden = append(forbidden, pw, url.QueryEscape(pw), strings.TrimPrefix(enc, role+":"))
	}
	names := make([]string, 0, len(r.texts))
	for name := range r.texts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		text := r.texts[name]
		for _, f := range forbidden {
			if strings.Contains(text, f) {
				r.t.Errorf("%s holds %q:\n%s", name, f, text)
			}
		}
		if m := garbled.FindString(text); m != "" {
			r.t.Errorf("%s has a garbled mask %q:\n%s", name, m, text)
		}
	}
}

// TestSecretsNeverPrinted runs every command and failure path with
// passwords that text replacement gets wrong — one letter (e), one equal
// to the user name, one full of URL-special characters — given in a URL's
// user info, in ?password=, in a key=value string, from flags and from the
// environment, and greps everything denorm printed or wrote: stdout,
// stderr, plan reports (JSON, HTML, Markdown, text), verify reports,
// rejects files, checkpoints (directory and server), drafted mappings and
// status. Suggested commands name $DENORM_SOURCE / $DENORM_TARGET instead
// of a masked URL that would not connect.
func TestSecretsNeverPrinted(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	root := testenv.Root(t)
	admin := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
	addPersons(t, admin, 300)
	pid := os.Getpid()
	same := fmt.Sprintf("dn_same_%d", pid)
	for _, c := range []struct{ name, role, pw string }{
		{"one letter", fmt.Sprintf("dn_e_%d", pid), "e"},
		{"same as the user name", same, same},
		{"URL-special characters", fmt.Sprintf("dn_special_%d", pid), `p@ss:w/rd?#%&=+ 'q"\x`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &secretRun{t: t, dir: t.TempDir(), texts: map[string]string{}}
			secretPaths(t, r, root, admin, c.role, c.pw)
			r.collect()
			r.check(c.role, c.pw)
		})
	}
}

func secretPaths(t *testing.T, r *secretRun, root, admin, role, pw string) {
	mapping := filepath.Join(root, "mappings", "examples", "person.yaml")
	src := testenv.ReaderRole(t, admin, role, pw)
	u, err := url.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	kv := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	forms := []struct{ name, src string }{
		{"url", src},
		{"query", fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&password=%s", role, u.Host, dbName, url.QueryEscape(pw))},
		{"kv", fmt.Sprintf("host=%s port=%s dbname=%s user=%s sslmode=disable password='%s'", u.Hostname(), u.Port(), dbName, role, kv.Replace(pw))},
	}
	// A server target with the same credentials (FerretDB takes PLAIN).
	direct, db := testenv.MongoDB(t)
	r.server = append(r.server, db)
	tu, _ := url.Parse(direct)
	tu.User = url.UserPassword(role, pw)
	tu.RawQuery = "authMechanism=PLAIN"
	target := tu.String()
	out := func(name string) string { return filepath.Join(r.dir, name) }

	for _, f := range forms {
		r.cli(0, "validate", "-v", "--mapping", mapping, "--source", f.src)
		r.cli(0, "plan", "--mapping", mapping, "--source", f.src, "--format", "json", "--output", out("plan-"+f.name+".json"))
		r.cli(0, "advise", "--source", f.src, "--output", out("advise-"+f.name+".yaml"))
	}
	for _, format := range []string{"text", "html", "markdown"} {
		r.cli(0, "plan", "--mapping", mapping, "--source", src, "--format", format, "--output", out("plan."+format))
	}

	// Directory target: rejects (exit 3), status, verify with a report,
	// the unfinished job and its hints, restart.
	dir := out("dirtarget")
	base := []string{"migrate", "--progress", "none", "--mapping", mapping, "--source", forms[2].src, "--target", dir, "--job", "j", "--max-doc-size", "300", "--rejects", out("rejects.jsonl")}
	r.cli(exitRejected, base...)
	r.cli(0, "status", "--target", dir)
	r.cli(1, "verify", "--mapping", mapping, "--source", forms[1].src, "--target", dir, "--report", out("verify-dir.json"))
	markRunning(t, dir, "j")
	hint := r.cli(exitUsage, base...)
	for _, w := range []string{`--source "$DENORM_SOURCE"`, "first set DENORM_SOURCE to the --source URL you gave", "--target " + dir, "--resume", "--restart"} {
		if !strings.Contains(hint, w) {
			t.Errorf("unfinished-job message lacks %q:\n%s", w, hint)
		}
	}
	r.cli(0, "status", "--target", dir, "--job", "j")
	r.cli(exitRejected, append(base, "--restart")...)

	// Server target with a password: migrate, status, verify, the
	// unfinished job (both URLs are then named by their variables).
	sbase := []string{"migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", target, "--job", "s"}
	summary := r.cli(0, sbase...)
	if !strings.Contains(summary, "target: mongodb://"+role+":xxxxx@") {
		t.Errorf("the summary does not show the target with its user name and a masked password:\n%s", summary)
	}
	r.cli(0, "status", "--target", target)
	r.cli(0, "verify", "--mapping", mapping, "--source", src, "--target", target, "--report", out("verify-server.json"))
	markRunning(t, direct, "s")
	hint = r.cli(exitUsage, sbase...)
	for _, w := range []string{`--source "$DENORM_SOURCE"`, `--target "$DENORM_TARGET"`, "first set DENORM_TARGET to the --target URI you gave"} {
		if !strings.Contains(hint, w) {
			t.Errorf("unfinished-job message lacks %q:\n%s", w, hint)
		}
	}
	status := r.cli(0, "status", "--target", target)
	if !strings.Contains(status, `--target "$DENORM_TARGET"`) {
		t.Errorf("status does not name $DENORM_TARGET:\n%s", status)
	}
	r.cli(0, append(sbase, "--resume")...)

	// From the environment: hints name the variables, with no note.
	t.Setenv("DENORM_SOURCE", forms[1].src)
	t.Setenv("DENORM_TARGET", out("envtarget"))
	ebase := []string{"migrate", "--progress", "none", "--mapping", mapping, "--job", "e"}
	r.cli(0, ebase...)
	markRunning(t, out("envtarget"), "e")
	hint = r.cli(exitUsage, ebase...)
	if !strings.Contains(hint, `--source "$DENORM_SOURCE" --target "$DENORM_TARGET"`) || strings.Contains(hint, "you gave") {
		t.Errorf("hints for a job run from the environment:\n%s", hint)
	}
	os.Unsetenv("DENORM_SOURCE")
	os.Unsetenv("DENORM_TARGET")

	// Failures: unreachable servers, malformed URLs, a PostgreSQL URL as
	// the target.
	closed := testenv.ClosedPort(t)
	silent := testenv.SilentServer(t, true)
	badSrc := func(host, query string) string {
		return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable%s", url.UserPassword(role, pw), host, dbName, query)
	}
	r.cli(1, "validate", "--mapping", mapping, "--source", badSrc(closed, ""))
	r.cli(1, "plan", "--mapping", mapping, "--source", badSrc(silent, "&connect_timeout=1"))
	r.cli(1, "advise", "--source", fmt.Sprintf("host=%s dbname=x user=%s password='%s' connect_timeout=1", strings.Split(closed, ":")[0]+" port="+strings.Split(closed, ":")[1], role, kv.Replace(pw)))
	badTarget := fmt.Sprintf("mongodb://%s@%s/db?authMechanism=PLAIN&serverSelectionTimeoutMS=300", url.UserPassword(role, pw), closed)
	// (--retry-for: a target that cannot be reached is tried again, each
	// failed attempt told, for that long.)
	r.cli(1, "migrate", "--mapping", mapping, "--source", src, "--target", badTarget, "--retry-for", "2s")
	r.cli(1, "status", "--target", badTarget)
	r.cli(4, "verify", "--mapping", mapping, "--source", src, "--target", badTarget, "--retry-for", "2s")
	// The password written into the URL as it is, not percent-encoded.
	raw := fmt.Sprintf("postgres://%s:%s@%s/%s", role, pw, u.Host, dbName)
	rawCode := 0
	if pw != "e" && pw != role {
		rawCode = exitUsage
	}
	r.cli(rawCode, "validate", "--mapping", mapping, "--source", raw)
	r.cli(exitUsage, "validate", "--mapping", mapping, "--source", fmt.Sprintf("postgres://%s:%s%%zz@%s/%s", role, url.PathEscape(pw), u.Host, dbName))
	r.cli(exitUsage, "migrate", "--mapping", mapping, "--source", src, "--target", fmt.Sprintf("mongodb://%s:%s%%zz@%s/db", role, url.PathEscape(pw), closed))
	r.cli(exitUsage, "migrate", "--mapping", mapping, "--source", src, "--target", src)
	r.cli(exitUsage, "status", "--target", "mongo://"+url.UserPassword(role, pw).String()+"@h/db")

	// An interrupted run: the target is slowed by a proxy, and the run is
	// stopped (as by Ctrl-C) once it saved a checkpoint.
	p := newFaultProxy(t, tu.Host)
	p.add("slow", "latency", "downstream", map[string]any{"latency": 20})
	slow, _ := url.Parse(p.via(target))
	slow.Path = "/" + db.Name() + "_i"
	args := []string{"migrate", "--progress", "none", "--mapping", mapping, "--source", src, "--target", slow.String(), "--job", "i", "--batch-size", "5"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sout, serr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &sout, &serr) }()
	peek := strings.Replace(direct, "/"+db.Name(), "/"+db.Name()+"_i", 1)
	waitCheckpoint(t, peek, "i", done)
	cancel()
	code := <-done
	r.n++
	r.texts["interrupted run (stdout)"], r.texts["interrupted run (stderr)"] = sout.String(), serr.String()
	if code != 1 || !strings.Contains(serr.String(), "interrupted: the checkpoint is saved") || !strings.Contains(serr.String(), `--source "$DENORM_SOURCE"`) {
		t.Errorf("interrupted run: exit %d\n%s%s", code, sout.String(), serr.String())
	}
	idb := db.Client().Database(db.Name() + "_i")
	t.Cleanup(func() { _ = idb.Drop(context.Background()) })
	r.server = append(r.server, idb)
}

// markRunning sets a finished job's checkpoint back to running, as a
// crash would leave it.
func markRunning(t *testing.T, target, id string) {
	t.Helper()
	c := loadCheckpoint(t, target, id)
	c.Phase = job.PhaseRunning
	ctx := context.Background()
	tg, err := load.Open(ctx, target, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close(ctx)
	// Written as another process would leave it: the record's JSON.
	body, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Records().Save(ctx, &load.Record{ID: c.ID, Job: c.Job, Updated: c.Updated, Body: body}); err != nil {
		t.Fatal(err)
	}
}

// waitCheckpoint waits until job id of target has saved a checkpoint with
// written documents; done reports a run that ended first.
func waitCheckpoint(t *testing.T, target, id string, done <-chan int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case code := <-done:
			t.Fatalf("the run ended (exit %d) before its first checkpoint", code)
		default:
		}
		if c := peekCheckpoint(target, id); c != nil {
			for _, s := range c.Streams {
				if s.Written > 0 {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no checkpoint of job %s appeared", id)
}
