package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFlagHints: an unknown flag is a usage error (exit 2) naming the
// command's nearest flags (did you mean), and the flags of mongoimport,
// mongorestore, pgloader and gh-ost point to denorm's equivalent; the
// usage hint follows, in text and in JSON.
func TestFlagHints(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--mapp", "m.yaml"}, "unknown flag: --mapp; did you mean --mapping?"},
		{[]string{"migrate", "--batchSize", "5"}, "unknown flag: --batchSize; did you mean --batch-size?"},
		{[]string{"migrate", "--maxRejects", "5"}, "unknown flag: --maxRejects; did you mean --max-rejects?"},
		{[]string{"migrate", "--targets", "x"}, "unknown flag: --targets; did you mean --target?"},
		{[]string{"verify", "--log-formt", "json"}, "unknown flag: --log-formt; did you mean --log-format?"},
		{[]string{"migrate", "--uri", "mongodb://h/db"}, "unknown flag: --uri: denorm takes the target as --target mongodb://host:port/db"},
		{[]string{"migrate", "--host", "h"}, "unknown flag: --host: denorm takes the target as one URI: --target mongodb://host:port/db"},
		{[]string{"migrate", "-d", "db"}, "unknown shorthand flag: 'd' in -d: the database is the target URI's path"},
		{[]string{"migrate", "--collection", "c"}, "unknown flag: --collection: the collections are the mapping's (name:); --collections a,b runs some of them"},
		{[]string{"migrate", "--mode", "upsert"}, "unknown flag: --mode: denorm always upserts by _id"},
		{[]string{"migrate", "--upsertFields", "a"}, "unknown flag: --upsertFields: _id comes from the source row's key"},
		{[]string{"migrate", "--file", "x.json"}, "unknown flag: --file: denorm reads no input file"},
		{[]string{"migrate", "--jsonArray"}, "unknown flag: --jsonArray: denorm reads no input file"},
		{[]string{"migrate", "--numInsertionWorkers", "4"}, "unknown flag: --numInsertionWorkers: use --workers N"},
		{[]string{"migrate", "--dryRun"}, "unknown flag: --dryRun: use 'denorm plan'"},
		{[]string{"migrate", "--dry-run"}, "unknown flag: --dry-run: use 'denorm plan'"},
		{[]string{"migrate", "--stopOnError"}, "unknown flag: --stopOnError: use --max-rejects 1"},
		{[]string{"migrate", "--on-error-stop"}, "unknown flag: --on-error-stop: use --max-rejects 1"},
		{[]string{"sync", "--stopOnError"}, "unknown flag: --stopOnError: use --max-rejects 1 (stop at the first rejected row, the checkpoint saved)\n"},
		{[]string{"plan", "--numInsertionWorkers", "4"}, "use --workers N (each table read and written as N parts in parallel) ('denorm plan' has no --workers: it is migrate's)"},
		{[]string{"plan", "--drop"}, "unknown flag: --drop: only 'denorm migrate --drop' drops the mapping's collections"},
		{[]string{"verify", "--nope"}, "unknown flag: --nope\n"},
	} {
		code, out, errs := runCLI(t, c.args...)
		hint := "Run 'denorm " + c.args[0] + " --help' for usage."
		if code != exitUsage || !strings.Contains(errs, c.want) || !strings.Contains(errs, hint) || out != "" {
			t.Errorf("denorm %s: exit %d, want 2 and %q then %q:\n%s%s", strings.Join(c.args, " "), code, c.want, hint, out, errs)
		}
	}
	code, _, errs := runCLI(t, "--log-format", "json", "migrate", "--mapp", "m.yaml")
	var rec struct{ Level, Msg, Hint string }
	if err := json.Unmarshal([]byte(errs), &rec); err != nil || code != exitUsage || rec.Msg != "unknown flag: --mapp; did you mean --mapping?" || rec.Hint == "" {
		t.Errorf("json: exit %d, %+v (%v):\n%s", code, rec, err, errs)
	}
}

// TestEditDistance checks the did-you-mean distance.
func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"mapp", "mapping", 3}, {"targte", "target", 2}, {"kitten", "sitting", 3}, {"", "abc", 3}} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
