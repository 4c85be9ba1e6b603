package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// TestUsageErrors: every command's flags are checked before anything is
// connected or written, and a bad value is bad usage (exit 2) with a
// message naming the flag. The source and target point to a closed port:
// a command that went past its checks would fail with another exit code.
func TestUsageErrors(t *testing.T) {
	root := testenv.Root(t)
	mapping := filepath.Join(root, "mappings", "examples", "person.yaml")
	src := "postgres://u:pw@" + testenv.ClosedPort(t) + "/db"
	dir := t.TempDir()
	migrate := []string{"migrate", "--mapping", mapping, "--source", src, "--target", dir}
	plan := []string{"plan", "--mapping", mapping, "--source", src}
	verify := []string{"verify", "--mapping", mapping, "--source", src, "--target", dir}
	syncArgs := []string{"sync", "--mapping", mapping, "--source", src, "--target", "mongodb://u:pw@" + testenv.ClosedPort(t) + "/db", "--job", "j"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"migrate: no mapping", []string{"migrate", "--source", src}, "no mapping file"},
		{"migrate: missing mapping file", []string{"migrate", "--mapping", filepath.Join(dir, "nope.yaml"), "--source", src, "--target", dir}, "cannot read the mapping file"},
		{"migrate: max-doc-size 0", append(migrate, "--max-doc-size", "0"), "--max-doc-size 0: must be between 1 and"},
		{"migrate: max-doc-size negative", append(migrate, "--max-doc-size", "-5"), "--max-doc-size -5"},
		{"migrate: max-doc-size over int32", append(migrate, "--max-doc-size", "3000000000"), "--max-doc-size 3000000000"},
		{"migrate: max-doc-size not a number", append(migrate, "--max-doc-size", "16MiB"), "invalid argument"},
		{"migrate: batch-size 0", append(migrate, "--batch-size", "0"), "--batch-size must be positive"},
		{"migrate: batch-size negative", append(migrate, "--batch-size", "-1"), "--batch-size must be positive"},
		{"migrate: workers 0", append(migrate, "--workers", "0"), "--workers must be between 1 and 64"},
		{"migrate: workers negative", append(migrate, "--workers", "-2"), "--workers must be between 1 and 64"},
		{"migrate: workers 65", append(migrate, "--workers", "65"), "--workers must be between 1 and 64"},
		{"migrate: partition out of range", append(migrate, "--partition", "3/3"), "--partition \"3/3\""},
		{"migrate: partition negative", append(migrate, "--partition", "-1/3"), "--partition \"-1/3\""},
		{"migrate: partition of zero", append(migrate, "--partition", "0/0"), "--partition \"0/0\""},
		{"migrate: checkpoint-every negative", append(migrate, "--checkpoint-every", "-1s"), "--checkpoint-every cannot be negative"},
		{"migrate: retry-for 0", append(migrate, "--retry-for", "0s"), "--retry-for must be positive"},
		{"migrate: retry-for negative", append(migrate, "--retry-for", "-1m"), "--retry-for must be positive"},
		{"migrate: progress", append(migrate, "--progress", "fancy"), "--progress must be"},
		{"migrate: job with a slash", append(migrate, "--job", "../x"), "a job name cannot contain"},
		{"migrate: resume without job", append(migrate, "--resume"), "need --job"},
		{"migrate: target with an unknown scheme", append(migrate, "--target", "s3://bucket/x"), `unknown scheme "s3"`},
		{"migrate: target is a PostgreSQL URL", append(migrate, "--target", src), "is a PostgreSQL URL"},
		{"migrate: target without scheme", append(migrate, "--target", "localhost:27017/db"), "without a scheme"},
		{"migrate: indexes", append(migrate, "--indexes", "later"), "--indexes must be after, before or none"},
		{"migrate: limit negative", append(migrate, "--limit", "-1"), "--limit -1: cannot be negative"},
		{"migrate: limit with a job", append(migrate, "--limit", "5", "--job", "j"), "leave out --job"},
		{"migrate: drop with resume", append(migrate, "--drop", "--job", "j", "--resume"), "--drop would drop what the job being resumed wrote"},
		{"migrate: empty collection name", append(migrate, "--collections", "people,,x"), "an empty collection name"},
		{"migrate: unknown collection", append(migrate, "--collections", "people,nope"), "--collections: the mapping has no collection nope (it has people)"},
		{"migrate: summary file in a missing directory", append(migrate, "--summary-file", filepath.Join(dir, "nope", "s.json")), "--summary-file"},
		{"migrate: log format", append([]string{"--log-format", "xml"}, migrate...), "--log-format must be text or json"},
		{"migrate: source with another scheme", []string{"migrate", "--mapping", mapping, "--source", "mysql://h/db"}, "is not a PostgreSQL URL"},
		{"validate: no mapping", []string{"validate"}, "no mapping file"},
		{"validate: missing mapping file", []string{"validate", "--mapping", filepath.Join(dir, "nope.yaml")}, "cannot read the mapping file"},
		{"validate: mapping is a directory", []string{"validate", "--mapping", dir}, "cannot read the mapping file"},
		{"plan: sample 0", append(plan, "--sample", "0"), "--sample must be a percentage"},
		{"plan: sample over 100", append(plan, "--sample", "101"), "--sample must be a percentage"},
		{"plan: sample negative", append(plan, "--sample", "-3"), "--sample must be a percentage"},
		{"plan: sample NaN", append(plan, "--sample", "NaN"), "--sample must be a percentage"},
		{"plan: batch-size 0", append(plan, "--batch-size", "0"), "--batch-size must be positive"},
		{"plan: max-doc-size 0", append(plan, "--max-doc-size", "0"), "--max-doc-size 0"},
		{"plan: max-doc-size negative", append(plan, "--max-doc-size", "-1"), "--max-doc-size -1"},
		{"plan: format", append(plan, "--format", "pdf"), "--format must be one of"},
		{"plan: fail-on", append(plan, "--fail-on", "info"), "--fail-on must be error or warning"},
		{"plan: progress", append(plan, "--progress", "fancy"), "--progress must be"},
		{"plan: missing mapping file", []string{"plan", "--mapping", filepath.Join(dir, "nope.yaml"), "--source", src}, "cannot read the mapping file"},
		{"verify: sample NaN", append(verify, "--sample", "NaN"), "--sample must be a percentage"},
		{"verify: sample 0", append(verify, "--sample", "0"), "--sample must be a percentage"},
		{"verify: percent over 100", append(verify, "--percent", "101"), "--sample must be a percentage"},
		{"verify: percent and sample", append(verify, "--percent", "5", "--sample", "10"), "--percent is --sample's other name"},
		{"verify: recheck-rounds 1", append(verify, "--recheck-rounds", "1"), "--recheck-rounds 1"},
		{"verify: recheck-max 0", append(verify, "--recheck-max", "0"), "--recheck-max 0"},
		{"verify: recheck-wait 0", append(verify, "--recheck-wait", "0s"), "--recheck-wait must be positive"},
		{"verify: batch-size negative", append(verify, "--batch-size", "-1"), "--batch-size must be positive"},
		{"verify: show negative", append(verify, "--show", "-1"), "--show cannot be negative"},
		{"verify: sort-memory 0", append(verify, "--sort-memory", "0"), "--sort-memory 0"},
		{"verify: sort-memory huge", append(verify, "--sort-memory", "100000000"), "--sort-memory 100000000"},
		{"verify: temp-dir missing", append(verify, "--temp-dir", filepath.Join(dir, "nope")), "--temp-dir"},
		{"verify: since", append(verify, "--since", "yesterday"), "--since: want an RFC 3339 time"},
		{"verify: empty watermark column", append(verify, "--since", "2026-01-02T03:04:05Z", "--watermark-columns", "updated_at,,x"), "an empty column name"},
		{"verify: target scheme", append(verify, "--target", "http://h/x"), `unknown scheme "http"`},
		{"verify: limit negative", append(verify, "--limit", "-3"), "--limit -3: cannot be negative"},
		{"verify: empty collection name", append(verify, "--collections", ","), "an empty collection name"},
		{"verify: unknown collection", append(verify, "--collections", "nope"), "--collections: the mapping has no collection nope"},
		{"verify: retry-for 0", append(verify, "--retry-for", "0s"), "--retry-for must be positive"},
		{"verify: missing mapping file", []string{"verify", "--mapping", filepath.Join(dir, "nope.yaml"), "--source", src, "--target", dir}, "cannot read the mapping file"},
		{"sync: no job", []string{"sync", "--mapping", mapping, "--source", src, "--target", dir}, "sync needs --job NAME"},
		{"sync: directory target", []string{"sync", "--mapping", mapping, "--source", src, "--target", dir, "--job", "j", "--method", "diff"}, "is a directory: sync replaces and deletes"},
		{"sync: target scheme", []string{"sync", "--mapping", mapping, "--source", src, "--target", "s3://b/x", "--job", "j"}, `unknown scheme "s3"`},
		{"sync: method", append(syncArgs, "--method", "triggers"), `--method "triggers": want logical or diff`},
		{"sync: modes", append(syncArgs, "--once", "--follow"), "--once, --every and --follow exclude each other"},
		{"sync: follow with diff", append(syncArgs, "--method", "diff", "--follow"), "--follow needs --method logical"},
		{"sync: drop with once", append(syncArgs, "--drop", "--once"), "--drop removes the job's change capture"},
		{"sync: drop-slot with once", append(syncArgs, "--drop-slot", "--once"), "--drop-slot removes the job's change capture"},
		{"sync: metrics without a loop", append(syncArgs, "--metrics-addr", "127.0.0.1:0"), "--metrics-addr serves metrics while sync runs"},
		{"sync: batch-size 0", append(syncArgs, "--batch-size", "0"), "must be positive"},
		{"migrate: sync diff", append(migrate, "--job", "j", "--sync", "diff"), "the only method a migration prepares is logical"},
		{"migrate: sync without job", append(migrate, "--sync", "logical"), "--sync logical needs --job NAME"},
		{"advise: empty schema", []string{"advise", "--source", src, "--schema", ""}, "--schema cannot be empty"},
		{"advise: numeric", []string{"advise", "--source", src, "--numeric", "float"}, "--numeric must be"},
		{"status: target scheme", []string{"status", "--target", "MONGO://h/db"}, `unknown scheme "mongo"`},
		{"status: file URL", []string{"status", "--target", "file:///tmp/x"}, "not a file:// URL"},
		{"verbose and quiet", []string{"validate", "-v", "-q", "--mapping", mapping}, "--verbose and --quiet exclude each other"},
		{"unknown flag", []string{"migrate", "--bogus"}, "unknown flag"},
		{"unknown command", []string{"migrat"}, "unknown command"},
		{"arguments", []string{"status", "extra"}, "unknown command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, c.args...)
			if code != exitUsage {
				t.Fatalf("denorm %s: exit %d, want %d\n%s%s", strings.Join(c.args, " "), code, exitUsage, out, errs)
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("denorm %s: stderr lacks %q:\n%s", strings.Join(c.args, " "), c.want, errs)
			}
			if strings.Contains(out+errs, "pw@") {
				t.Errorf("the password is printed:\n%s%s", out, errs)
			}
		})
	}
}
