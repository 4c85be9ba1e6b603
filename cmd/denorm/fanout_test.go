package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform/report"
)

// TestFanout: on the person example over 2,000 generated persons, whose
// contact details copy their type's name by a lookup (3 types, each in
// the documents of about 1,300 persons):
//   - plan predicts, per table, the documents one change of a row
//     rewrites: the type table's max is the most persons holding one
//     type (counted here in SQL), a person's own row rewrites 1; over
//     --max-fanout 1000 the type table is a high-fanout warning naming
//     the lookup that causes it, in JSON, text, Markdown and HTML; with
//     --max-fanout 0 nothing is flagged; --fail-on warning then fails;
//   - advise's draft (which also copies address types, all but one
//     address of one type) says the fan-out in its header, the tables
//     over the limit first with their causes, warns on stderr, and
//     --report has the fan-out table;
//   - sync --once after a type renamed rewrites exactly those persons and
//     its summary names the type table as the worst, with that count.
func TestFanout(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	t.Parallel()
	db := personsDB(t, 2000)
	mapping := example(t, "person")
	perType := sqlMap(t, db, "SELECT type_id::text, count(DISTINCT person_id)::text FROM contact_detail GROUP BY type_id")
	maxPersons := sqlInt(t, db, "SELECT max(n) FROM (SELECT count(DISTINCT person_id) n FROM contact_detail GROUP BY type_id) x")
	if maxPersons <= 1000 {
		t.Fatalf("the fixture's largest type is held by %d persons, not over 1000", maxPersons)
	}

	code, out, errs := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", db, "--format", "json", "--max-fanout", "1000")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, errs)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	fan := map[string]mappings.TableFanout{}
	for _, f := range rep.Fanout {
		fan[f.Table] = f
	}
	typ, person := fan["public.contact_detail_type"], fan["public.person"]
	if typ.Max != int64(maxPersons) || typ.Rows != int64(len(perType)) || len(typ.Places) != 1 || typ.Places[0].How != "copied by lookup into" || typ.Places[0].Node != "people.contactDetails.type" {
		t.Errorf("contact_detail_type's fan-out %+v; want max %d over %d rows, one place: the lookup people.contactDetails.type", typ, maxPersons, len(perType))
	}
	if person.P50 != 1 || person.Max != 1 || person.Mean != 1 {
		t.Errorf("a person's own row rewrites its document alone; predicted %+v", person.FanoutFigures)
	}
	if rep.MaxFanout != 1000 {
		t.Errorf("maxFanout %d in the JSON report", rep.MaxFanout)
	}
	var flagged []report.Warning
	for _, w := range rep.Warnings {
		if w.Rule == "high-fanout" {
			flagged = append(flagged, w)
		}
	}
	if len(flagged) != 1 || flagged[0].Path != "people.contactDetails.type" || flagged[0].Collection != "people" ||
		!strings.Contains(flagged[0].Message, fmt.Sprintf("public.contact_detail_type: one change of a row rewrites p50 %d", typ.P50)) ||
		!strings.Contains(flagged[0].Message, fmt.Sprintf("max %d documents", maxPersons)) ||
		!strings.Contains(flagged[0].Message, "contact_detail_type.(id, name) copied by lookup into people.contactDetails.type") ||
		!strings.Contains(flagged[0].Message, "over --max-fanout 1000") {
		t.Errorf("high-fanout warnings %+v; want one for contact_detail_type naming its lookup", flagged)
	}
	if code, out, errs := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", db, "--max-fanout", "1000"); code != 0 {
		t.Errorf("plan text: exit %d\n%s", code, errs)
	} else {
		wantOut(t, "plan text", out, `fan-out \(documents one change of a row makes sync rewrite; over --max-fanout 1000 flagged\):`,
			fmt.Sprintf(`public\.contact_detail_type \(3 rows\): p50 \d+, p99 \d+, max %d, mean [\d.]+  \[over --max-fanout 1000\]`, maxPersons),
			`contact_detail_type\.\(id, name\) copied by lookup into people\.contactDetails\.type: p50`,
			`public\.person \(2002 rows\): p50 1, p99 1, max 1, mean 1\.0\n`, `high-fanout`)
	}
	for format, want := range map[string]string{"markdown": `## Fan-out`, "html": `<h2 id="fanout">Fan-out</h2>`} {
		if code, out, errs := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", db, "--format", format); code != 0 {
			t.Errorf("plan --format %s: exit %d\n%s", format, code, errs)
		} else {
			wantOut(t, "plan --format "+format, out, want, `contact_detail_type`)
		}
	}
	if code, out, _ := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", db, "--max-fanout", "0"); code != 0 || strings.Contains(out, "high-fanout") || strings.Contains(out, "[over") {
		t.Errorf("plan --max-fanout 0 (exit %d) flags a table:\n%s", code, out)
	}
	if code, _, errs := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", db, "--fail-on", "warning"); code != 1 || !strings.Contains(errs, "--fail-on warning") {
		t.Errorf("plan --fail-on warning with a high-fanout warning: exit %d\n%s", code, errs)
	}
	if code, _, errs := runCLI(t, "plan", "-q", "--mapping", mapping, "--source", db, "--max-fanout", "-1"); code != 2 || !strings.Contains(errs, "--max-fanout") {
		t.Errorf("plan --max-fanout -1: exit %d\n%s", code, errs)
	}

	// advise: the draft's header and --report.
	dir := t.TempDir()
	code, out, errs = runCLI(t, "advise", "--source", db, "--max-fanout", "1000", "--report", filepath.Join(dir, "advise.md"))
	if code != 0 {
		t.Fatalf("advise: exit %d\n%s", code, errs)
	}
	header, _, _ := strings.Cut(out, "\nversion:")
	wantOut(t, "advise's header", header, `# Fan-out, counted on the data: 2 tables whose one row change can make sync rewrite more than 1000 documents`,
		`#   OVER: public\.address_type: .* by address_type\.\(id, name\) copied by lookup into people\.addresses\.type`,
		fmt.Sprintf(`#   OVER: public\.contact_detail_type: one change of a row rewrites p50 \d+, p99 \d+, max %d documents .*; (most )?by contact_detail_type\.`, maxPersons))
	wantOut(t, "advise's stderr", errs, `high fan-out: public\.contact_detail_type: .* \(over --max-fanout 1000\)`)
	md, err := os.ReadFile(filepath.Join(dir, "advise.md"))
	if err != nil {
		t.Fatal(err)
	}
	wantOut(t, "advise --report", string(md), fmt.Sprintf(`\| public\.contact\\_detail\\_type \| fan-out \| people\.contactDetails\.type \| public\.contact\\_detail\\_type: one change of a row rewrites p50 \d+, p99 \d+, max %d documents .*: OVER --max-fanout 1000 \|`, maxPersons),
		`\| public\.person \| fan-out \| people \| public\.person: one change of a row rewrites p50 1, p99 1, max 1 documents`)

	// sync --once: a type renamed rewrites the persons holding it.
	testenv.PsqlFile(t, db, repoPath(t, identityFull))
	uri, _ := testenv.MongoDB(t)
	job := syncJob(t, db)
	mustCLI(t, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri, "--job", job, "--method", "logical", "--once")
	testenv.Exec(t, db, "UPDATE contact_detail_type SET name = 'renamed' WHERE id = 2; UPDATE person SET last_name = 'Changed' WHERE id = 1")
	out = mustCLI(t, "sync", "-q", "--mapping", mapping, "--source", db, "--target", uri, "--job", job, "--once")
	wantOut(t, "sync summary", out, regexp.QuoteMeta(fmt.Sprintf("fan-out, documents rebuilt per changed row (worst tables): public.contact_detail_type %s.0 (%s for 1), public.person 1.0 (1 for 1)", perType["2"], perType["2"])))
}
