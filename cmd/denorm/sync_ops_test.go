package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/denorm/denorm/internal/testenv"
)

// wantOut fails the test unless out matches every pattern.
func wantOut(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("%s: output lacks %q:\n%s", what, p, out)
		}
	}
}

// TestSyncOperations checks what the README says about running sync, on
// the person example:
//   - logical sync and validate --sync logical refuse tables whose replica
//     identity lacks a join column, printing the exact ALTER TABLE
//     statements, and leave no slot behind; a directory target is refused;
//   - a job made by migrate --job is continued by sync --method diff: an
//     unchanged target costs no writes, a change rewrites its document;
//     the --once summary; status shows the sync job; one continued by
//     --method logical gets a slot and a copy by diff, and then cannot
//     switch to diff without --drop;
//   - migrate --sync logical --job creates the slot, and sync (the method
//     taken from the job) continues it without a copy; its summary counts
//     the changed rows by table; status --source shows the slot;
//   - --follow with --metrics-addr serves every metric the README names
//     and prints a line per batch; a signal stops it with exit 0;
//   - one run per job: while it follows, a second sync of the job and
//     its --drop are refused;
//   - sync --drop removes the slot, the publication and the checkpoint;
//   - a slot dropped behind the job's back stops sync with the recovery
//     steps, which then work;
//   - a mapped column dropped while syncing stops sync before it writes a
//     document built from it.
func TestSyncOperations(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	t.Parallel()
	db := testenv.PostgresDB(t, repoPath(t, "testdata", "examples", "seed.sql"))
	mapping := example(t, "person")
	slots := func(job string) string {
		return testenv.QueryString(t, db, "SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'denorm_"+job+"') || ' ' || (SELECT count(*) FROM pg_publication WHERE pubname = 'denorm_"+job+"')")
	}
	cli := func(code int, args ...string) string {
		t.Helper()
		out, got := denormCLI(args...)
		if got != code {
			t.Fatalf("denorm %s: exit %d, want %d\n%s", strings.Join(args, " "), got, code, out)
		}
		return out
	}

	// Default replica identity: contact_detail.person_id and
	// address.person_id are outside the primary key.
	uri, mdb := testenv.MongoDB(t)
	jl := syncJob(t, db)
	alters := []string{`ALTER TABLE "public"."address" REPLICA IDENTITY FULL;`, `ALTER TABLE "public"."contact_detail" REPLICA IDENTITY FULL;`}
	out := cli(1, "sync", "--mapping", mapping, "--source", db, "--target", uri, "--job", jl, "--method", "logical", "--once")
	t.Logf("replica identity:\n%s", out)
	wantOut(t, "sync with the default replica identity", out, append(alters, `denorm never alters the source`)...)
	out = cli(1, "validate", "--mapping", mapping, "--source", db, "--sync", "logical")
	wantOut(t, "validate --sync logical", out, alters...)
	if got := slots(jl); got != "0 0" {
		t.Errorf("a refused sync left slots and publications: %s", got)
	}
	testenv.PsqlFile(t, db, repoPath(t, identityFull))
	cli(2, "sync", "--mapping", mapping, "--source", db, "--target", t.TempDir(), "--job", jl, "--method", "diff")

	// A migrate job continued by diff passes.
	jd := syncJob(t, db)
	cli(0, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", uri, "--job", jd)
	out = cli(0, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri, "--job", jd, "--method", "diff", "--once")
	wantOut(t, "first diff pass", out, `sync job `+jd+` \(diff\): current as of `, `(?m)^people +0 +0 +2$`, `(?m)^TOTAL +0 +0 +2$`)
	testenv.Exec(t, db, "UPDATE person SET last_name = 'Changed' WHERE id = 2")
	out = cli(0, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri, "--job", jd, "--once")
	wantOut(t, "second diff pass", out, `(?m)^people +1 +0 +1$`)
	var doc bson.M
	if err := mdb.Collection("people").FindOne(context.Background(), bson.D{{Key: "_id", Value: 2}}).Decode(&doc); err != nil || doc["lastName"] != "Changed" {
		t.Fatalf("person 2 after the diff pass: %v %v", doc, err)
	}
	out = cli(0, "status", "--target", uri, "--job", jd)
	wantOut(t, "status of a diff job", out, `sync: method diff`, `last pass: .*, 2 passes`, `totals: 0 rows changed; documents 1 written, 0 deleted, 3 unchanged`, `next: denorm sync `)
	out = cli(0, "status", "--target", uri, "--job", jd, "--format", "json")
	var st struct {
		Jobs []struct {
			Job  string
			Next string
			Sync *struct {
				Method         string
				CopyInProgress bool
				Passes         int64
				LastPass       *time.Time
				DocsWritten    int64
				DocsUnchanged  int64
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Jobs) != 1 || st.Jobs[0].Sync == nil {
		t.Fatalf("status --format json of a diff job: %v\n%s", err, out)
	}
	if j := st.Jobs[0]; j.Job != jd || j.Sync.Method != "diff" || j.Sync.CopyInProgress || j.Sync.Passes != 2 || j.Sync.LastPass == nil ||
		j.Sync.DocsWritten != 1 || j.Sync.DocsUnchanged != 3 || !strings.HasPrefix(j.Next, "denorm sync ") {
		t.Errorf("status --format json of a diff job: %+v %+v", j, *j.Sync)
	}

	// A migrate job continued by logical sync: a slot, and a copy by diff;
	// then it cannot switch to diff without --drop.
	uri3, _ := testenv.MongoDB(t)
	jm := syncJob(t, db)
	cli(0, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", uri3, "--job", jm)
	out = cli(0, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri3, "--job", jm, "--method", "logical")
	wantOut(t, "a migrate job continued by logical sync", out, `\(this run made the initial copy\)`, `(?m)^people +0 +0 +2$`)
	out = cli(2, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri3, "--job", jm, "--method", "diff")
	wantOut(t, "logical to diff", out, `syncs with --method logical, not diff`, `--drop`)

	// migrate --sync logical, continued by sync without --method.
	uri2, mdb2 := testenv.MongoDB(t)
	cli(0, "migrate", "-q", "--mapping", mapping, "--source", db, "--target", uri2, "--job", jl, "--sync", "logical")
	if got := slots(jl); got != "1 1" {
		t.Fatalf("migrate --sync logical: slot and publication %s, want 1 1", got)
	}
	testenv.Exec(t, db, `UPDATE person SET first_name = 'Tom' WHERE id = 1;
		INSERT INTO contact_detail (id, person_id, type_id, detail) VALUES (50, 2, 1, 'w@example.com');
		UPDATE address SET person_id = 2 WHERE id = 1;`)
	out = cli(0, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri2, "--job", jl, "--once")
	wantOut(t, "logical --once", out, `sync job `+jl+` \(logical\): current at position [0-9A-F]+/[0-9A-F]+\n`,
		`(?m)^public\.person +0 +1 +0 +0$`, `(?m)^public\.contact_detail +1 +0 +0 +0$`, `(?m)^public\.address +0 +1 +0 +0$`,
		`(?m)^people +2 +0 +0$`, `transactions applied: 1; lag at the end: `)
	t.Logf("sync --once:\n%s", out)
	if strings.Contains(out, "initial copy") {
		t.Errorf("sync after migrate --sync logical made a copy:\n%s", out)
	}
	cli(0, "verify", "-q", "--mapping", mapping, "--source", db, "--target", uri2)
	out = cli(0, "status", "--target", uri2, "--job", jl, "--source", db)
	t.Logf("status:\n%s", out)
	wantOut(t, "status of a logical job", out, `sync: method logical, slot denorm_`+jl+`, position `, `slot: idle, confirmed .* [KM]iB of WAL behind, .* [KM]iB kept on the source's disk; wal_status `)
	if strings.Contains(out, "warning: the slot holds") {
		t.Errorf("a slot within the default budget was warned about:\n%s", out)
	}
	// Over a budget of 0 MiB: warned, in text and in JSON.
	out = cli(0, "status", "--target", uri2, "--job", jl, "--source", db, "--max-retained-wal", "0")
	wantOut(t, "status over the WAL budget", out, `warning: the slot holds .* [KM]iB of WAL on the source, over the budget of 0.0 KiB`)
	out = cli(0, "status", "--target", uri2, "--job", jl, "--source", db, "--max-retained-wal", "0", "--format", "json")
	wantOut(t, "status --format json with the slot", out, `"slotStatus": \{`, `"retainedBytes": [1-9]`, `"overBudget": true`, `"walStatus": "reserved"`, `"behindBytes": `)

	// --follow with metrics, stopped by a signal (a cancelled context).
	f := startFollow(t, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri2, "--job", jl, "--follow")
	testenv.Exec(t, db, "DELETE FROM contact_detail WHERE id = 50")
	var m string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if m = f.metrics(); strings.Contains(m, `denorm_sync_changes_applied_total{job_name="`+jl+`",method="logical",table="public.contact_detail"} 1`) {
			break
		}
	}
	for _, name := range []string{"denorm_sync_changes_applied_total", "denorm_sync_documents_written_total", "denorm_sync_documents_deleted_total",
		"denorm_sync_passes_total", "denorm_sync_errors_total", "denorm_sync_lag_seconds", "denorm_sync_transaction_lag_seconds_bucket",
		"denorm_sync_last_success_timestamp_seconds", "denorm_sync_slot_retained_bytes", "denorm_sync_slot_behind_bytes", "denorm_sync_apply_seconds_total",
		"denorm_sync_documents_per_change_bucket"} {
		if !strings.Contains(m, "\n"+name+"{") {
			t.Errorf("metrics lack %s:\n%s", name, m)
		}
	}
	// The detail deleted rebuilt its person's document: one change, one
	// document.
	wantOut(t, "fan-out metric", m, `denorm_sync_documents_per_change_sum\{job_name="`+jl+`",method="logical",table="public.contact_detail"\} 1\n`,
		`denorm_sync_documents_per_change_count\{job_name="`+jl+`",method="logical",table="public.contact_detail"\} 1\n`)
	// One run per job: while it follows, another sync of the job and its
	// --drop are refused, and the slot stays.
	out = cli(1, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri2, "--job", jl, "--once")
	wantOut(t, "a second sync of a running job", out, `job "`+jl+`" is being run by another process \(sync `, `One run per job`, `denorm status --target`)
	out = cli(1, "sync", "--source", db, "--target", uri2, "--job", jl, "--drop-slot")
	wantOut(t, "--drop-slot of a running job", out, `job "`+jl+`" is being run by another process \(sync `)
	if got := slots(jl); got != "1 1" {
		t.Errorf("a refused --drop-slot of a running job: slot and publication %s, want 1 1", got)
	}
	f.stop()
	if code := f.wait(t); code != 0 {
		t.Fatalf("sync --follow stopped: exit %d\n%s", code, f.out.String())
	}
	wantOut(t, "sync --follow", f.out.String(), `pass 1 \(logical\) 1 rows changed \(public\.contact_detail \+0 ~0 -1\); documents 1 written, 0 deleted, 0 unchanged; position \S+; lag `,
		`stopped: position \S+ saved`, `fan-out, documents rebuilt per changed row \(worst tables\): public\.contact_detail 1\.0 \(1 for 1\)\nstopped: `)

	// --drop-slot.
	out = cli(0, "sync", "--source", db, "--target", uri2, "--job", jl, "--drop-slot")
	wantOut(t, "sync --drop-slot", out, `sync job `+jl+` dropped`)
	if got := slots(jl); got != "0 0" {
		t.Errorf("after --drop-slot: slot and publication %s, want 0 0", got)
	}
	cli(1, "status", "--target", uri2, "--job", jl)

	// A new logical job makes its own copy; its slot dropped behind its
	// back, the next sync catches up by a diff from a new slot.
	out = cli(0, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri2, "--job", jl, "--method", "logical")
	wantOut(t, "a new logical job on a full target", out, `\(this run made the initial copy\)`, `(?m)^people +0 +0 +2$`)
	testenv.Exec(t, db, "SELECT pg_drop_replication_slot('denorm_"+jl+"')")
	testenv.Exec(t, db, "UPDATE person SET first_name = 'Thomas' WHERE id = 1")
	out = cli(0, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri2, "--job", jl, "--once")
	t.Logf("lost slot:\n%s", out)
	wantOut(t, "a lost slot", out, `replication slot denorm_`+jl+` does not exist`, `catching up with a diff against the source`, `\(this run made the initial copy\)`, `(?m)^people +1 +0 +1$`)
	cli(0, "verify", "-q", "--mapping", mapping, "--source", db, "--target", uri2)

	// A mapped column dropped while following; then the mapping no longer
	// resolves.
	f = startFollow(t, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri2, "--job", jl, "--follow")
	testenv.Exec(t, db, "ALTER TABLE person DROP COLUMN last_name; UPDATE person SET first_name = 'Tim' WHERE id = 1")
	if code := f.wait(t); code != 1 {
		t.Fatalf("sync --follow across a dropped column: exit %d, want 1\n%s", code, f.out.String())
	}
	t.Logf("dropped column:\n%s", f.out.String())
	wantOut(t, "a dropped column", f.out.String(), `table public\.person changed while syncing: column "last_name" was dropped`, `denorm sync --drop`)
	if err := mdb2.Collection("people").FindOne(context.Background(), bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["firstName"] != "Thomas" || doc["lastName"] != "Andersen" {
		t.Fatalf("person 1 after the refused change: %v %v", doc, err)
	}
	cli(2, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri2, "--job", jl, "--once")
}

// follower is a sync --follow run in process, with metrics on addr.
type follower struct {
	addr   string
	out    lockedBuffer
	stop   context.CancelFunc
	exited chan int
}

// startFollow runs the command line with --metrics-addr on a free port
// and waits until it serves metrics (it has then checked the mapping
// against the source).
func startFollow(t *testing.T, args ...string) *follower {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &follower{addr: ln.Addr().String(), exited: make(chan int, 1)}
	ln.Close()
	ctx, stop := context.WithCancel(context.Background())
	f.stop = stop
	t.Cleanup(stop)
	go func() { f.exited <- run(ctx, append(args, "--metrics-addr", f.addr), &f.out, &f.out) }()
	for deadline := time.Now().Add(time.Minute); f.metrics() == ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no metrics within a minute:\n%s", f.out.String())
		}
	}
	return f
}

func (f *follower) metrics() string {
	resp, err := http.Get("http://" + f.addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// wait returns the exit code, within a minute.
func (f *follower) wait(t *testing.T) int {
	t.Helper()
	select {
	case code := <-f.exited:
		return code
	case <-time.After(time.Minute):
		t.Fatalf("sync --follow did not end within a minute:\n%s", f.out.String())
		return -1
	}
}
