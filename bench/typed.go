package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
)

// The typed benchmark (T): one pair of tables per type family of the Types
// table (docs/types.md), a parent and four children per parent embedded in
// it, every value column of the family's types, generated in SQL at two
// scales. Per family, denorm migrate into a directory runs interleaved with
// the floor of the same rows (floor.go), and the rows' decoding and
// conversion is timed in process on a sample of the wire rows
// (extract.CapturedRows): the family's time over the floor, and its cost
// per value beside COPY's, name the slow conversions. The orders with wide
// lines of wide.go run too with `numeric: double` (bench/wide-double.yaml),
// the shape of issue 29's benchmark, at two scales.

// typedColumn is one value column of a family: its type and the SQL
// expression of its value over x, a bigint distinct per row.
type typedColumn struct{ typ, expr string }

// typedFamily is one type family of the typed benchmark.
type typedFamily struct {
	name string
	// covers are the Types table's rows (their first cell) the family
	// stands for.
	covers []string
	// numeric is the mapping's numeric mode ("": the default, decimal).
	numeric string
	// table names the family's tables, table_p and table_c; families
	// differing only in their numeric mode share them.
	table string
	// setup creates the types the columns use.
	setup string
	cols  []typedColumn
}

// typedChildren is the number of children per parent.
const typedChildren = 4

var numericCols = []typedColumn{
	{"numeric(15,2)", "(x * 7919 % 10000000000000) / 100.0"},
	{"numeric(15,2)", "(x % 100000) / 100.0"},
	{"numeric(38,10)", "(x * 104729 % 1000000000000)::numeric / 7"},
	{"numeric(38,10)", "CASE WHEN x % 10 = 0 THEN NULL ELSE (x % 1000)::numeric / 3 END"},
	{"numeric", "round(x::numeric / 64, 6)"},
	{"numeric", "x::numeric * 1000003"},
}

// The columns of the families the mixed family takes from too.
var intCols = []typedColumn{
	{"smallint", "(x % 30000)::int2"}, {"smallint", "(x % 7 - 3)::int2"},
	{"integer", "(x * 7919 % 2000000000)::int4"}, {"integer", "(x % 100)::int4"},
	{"bigint", "x * 1000003"}, {"bigint", "-(x * 7919)"},
}

var dateCols = []typedColumn{
	{"date", "date '2000-01-01' + (x % 20000)::int"}, {"date", "date '2020-01-01' + (x % 1800)::int"},
	{"date", "date '1970-01-01' + (x % 30000)::int"}, {"date", "date '2020-01-31' + (x % 1800)::int"},
	{"date", "date '1900-01-01' + (x % 50000)::int"}, {"date", "CASE WHEN x % 5 = 0 THEN NULL ELSE date '2020-01-02' + (x % 1800)::int END"},
}

var charCols = []typedColumn{
	{"char(1)", "(ARRAY['N','S','C'])[1 + x % 3]"}, {"char(3)", "(ARRAY['USD','EUR','GB'])[1 + x % 3]"},
	{"char(12)", "'SKU' || lpad((x * 7919 % 1000000)::text, 6, '0')"}, {"char(20)", "'W' || x % 50"},
	{"char(8)", "substr(md5(x::text), 1, 8)"}, {"char(40)", "'Name ' || x"},
}

var textCols = []typedColumn{
	{"varchar(40)", "'Customer ' || x % 50000"}, {"varchar(80)", "'Item ' || substr(md5(x::text), 1, 12)"},
	{"varchar(200)", "CASE WHEN x % 4 = 0 THEN NULL ELSE 'Café crème, größe ' || x || ' — deliver to the back door' END"},
	{"text", "md5(x::text)"}, {"text", "'k' || x % 10"}, {"text", "repeat(md5(x::text), 3)"},
}

var boolCols = []typedColumn{
	{"boolean", "x % 2 = 0"}, {"boolean", "x % 3 = 0"}, {"boolean", "x % 5 <> 0"},
	{"boolean", "x % 7 = 1"}, {"boolean", "true"}, {"boolean", "CASE WHEN x % 10 = 0 THEN NULL ELSE x % 11 = 0 END"},
}

// typedFamilies are the families, in the order they run.
var typedFamilies = []typedFamily{
	{name: "numeric decimal", covers: []string{"numeric"}, table: "t_numeric", numeric: "decimal", cols: numericCols},
	{name: "numeric double", covers: []string{"numeric"}, table: "t_numeric", numeric: "double", cols: numericCols},
	{name: "numeric string", covers: []string{"numeric"}, table: "t_numeric", numeric: "string", cols: numericCols},
	{name: "int2/int4/int8", covers: []string{"smallint, integer", "bigint"}, table: "t_int", cols: intCols},
	{name: "float4/float8", covers: []string{"real, double precision"}, table: "t_float", cols: []typedColumn{
		{"real", "((x % 100000) / 7.0)::float4"}, {"real", "(x * 1.5)::float4"}, {"real", "((x % 1000) / 8.0)::float4"},
		{"double precision", "x / 7.0"}, {"double precision", "(x % 1000000) * 0.01"}, {"double precision", "x * 1e10 / 3"},
	}},
	{name: "date", covers: []string{"date, timestamp, timestamptz"}, table: "t_date", cols: dateCols},
	{name: "timestamp", covers: []string{"date, timestamp, timestamptz"}, table: "t_timestamp", cols: []typedColumn{
		{"timestamp", "timestamp '2020-01-01' + x * interval '1 second 1 microsecond'"},
		{"timestamp", "timestamp '2000-01-01' + x * interval '1 minute'"},
		{"timestamp", "timestamp '1999-12-31 23:00' + x * interval '17 milliseconds'"},
		{"timestamp", "timestamp '2024-06-01' + (x % 86400) * interval '1 second'"},
		{"timestamp", "timestamp '1960-01-01' + x * interval '3 hours 7 microseconds'"},
		{"timestamp", "CASE WHEN x % 5 = 0 THEN NULL ELSE timestamp '2021-01-01' + x * interval '1 millisecond' END"},
	}},
	{name: "timestamptz", covers: []string{"date, timestamp, timestamptz"}, table: "t_timestamptz", cols: []typedColumn{
		{"timestamptz", "timestamptz '2020-01-01 00:00Z' + x * interval '1 second 1 microsecond'"},
		{"timestamptz", "timestamptz '2000-01-01 00:00Z' + x * interval '1 minute'"},
		{"timestamptz", "timestamptz '1999-12-31 23:00Z' + x * interval '17 milliseconds'"},
		{"timestamptz", "timestamptz '2024-06-01 00:00Z' + (x % 86400) * interval '1 second'"},
		{"timestamptz", "timestamptz '1960-01-01 00:00Z' + x * interval '3 hours 7 microseconds'"},
		{"timestamptz", "CASE WHEN x % 5 = 0 THEN NULL ELSE timestamptz '2021-01-01 00:00Z' + x * interval '1 millisecond' END"},
	}},
	{name: "char(n)", covers: []string{"char(n)"}, table: "t_char", cols: charCols},
	{name: "text/varchar", covers: []string{"text, varchar"}, table: "t_text", cols: textCols},
	{name: "uuid", covers: []string{"uuid"}, table: "t_uuid", cols: []typedColumn{
		{"uuid", "md5(x::text)::uuid"}, {"uuid", "md5((x + 1)::text)::uuid"},
		{"uuid", "md5((x * 3)::text)::uuid"}, {"uuid", "md5((x % 1000)::text)::uuid"},
	}},
	{name: "bool", covers: []string{"boolean"}, table: "t_bool", cols: boolCols},
	{name: "bytea", covers: []string{"bytea"}, table: "t_bytea", cols: []typedColumn{
		{"bytea", "decode(md5(x::text), 'hex')"}, {"bytea", "sha256(x::text::bytea)"},
		{"bytea", "decode(repeat(md5(x::text), 4), 'hex')"},
	}},
	{name: "arrays", covers: []string{"arrays"}, table: "t_array", cols: []typedColumn{
		{"integer[]", "ARRAY[(x % 100)::int, (x % 1000)::int, (x % 7)::int]"},
		{"integer[]", "ARRAY[x::int, (x * 3)::int, 0, (x % 5)::int, 1]"},
		{"text[]", "ARRAY['a' || x % 10, 'tag' || x % 100, 'x']"},
		{"text[]", "ARRAY[md5(x::text), 'red', 'green', 'blue']"},
	}},
	{name: "json/jsonb", covers: []string{"json, jsonb"}, table: "t_json", cols: []typedColumn{
		{"jsonb", "jsonb_build_object('id', x, 'name', 'n' || x % 1000, 'price', (x % 10000) / 100.0, 'tags', jsonb_build_array('a', x % 7))"},
		{"jsonb", "jsonb_build_object('k', x % 10, 'ok', x % 2 = 0)"},
		{"json", "json_build_object('sku', 'SKU' || x % 1000, 'qty', x % 12, 'nested', json_build_object('w', x % 3))"},
	}},
	{name: "domains", covers: []string{"domains"}, table: "t_domain",
		setup: "CREATE DOMAIN typed_count AS integer CHECK (VALUE >= 0); CREATE DOMAIN typed_amount AS numeric(15,2); CREATE DOMAIN typed_code AS varchar(20);",
		cols: []typedColumn{
			{"typed_count", "(x % 100000)::int"}, {"typed_count", "(x % 17)::int"},
			{"typed_amount", "(x % 100000) / 100.0"}, {"typed_code", "'C-' || x % 1000"},
		}},
	// A wide row: past the 16 fields up to which a document's names are
	// checked in a 64-bit mask, where per-field costs show (issue 29's
	// "typed wide rows"), numerics as doubles as in its benchmark.
	{name: "mixed, 24 columns", covers: []string{"smallint, integer", "bigint", "numeric", "text, varchar", "char(n)", "boolean", "date, timestamp, timestamptz"},
		table: "t_mixed", numeric: "double", cols: mixedCols()},
	{name: "enum/interval", covers: []string{"enums and every other type"}, table: "t_other",
		setup: "CREATE TYPE typed_status AS ENUM ('new', 'paid', 'shipped', 'cancelled');",
		cols: []typedColumn{
			{"typed_status", "(enum_range(NULL::typed_status))[1 + x % 4]"}, {"typed_status", "(enum_range(NULL::typed_status))[1 + x % 3]"},
			{"interval", "x * interval '1 second'"}, {"interval", "(x % 100) * interval '1 day 2 hours'"},
		}},
}

// mixedCols are the mixed family's 24 columns: the numerics, four each of
// the date, char(n), text and integer families' and two booleans.
func mixedCols() []typedColumn {
	cols := slices.Clone(numericCols)
	for _, f := range [][]typedColumn{dateCols, charCols, textCols, intCols} {
		cols = append(cols, f[:4]...)
	}
	return append(cols, boolCols[:2]...)
}

// typedNotCovered are the Types table's rows no family stands for, and
// why.
var typedNotCovered = map[string]string{
	"a `sql:` field": "not a column type: PostgreSQL computes the value (to_json), denorm decodes its JSON",
}

// typedSQL is the SQL creating and filling family f's tables with n
// parents and typedChildren children each.
func typedSQL(f typedFamily, n int) string {
	var b strings.Builder
	if f.setup != "" {
		b.WriteString(f.setup + "\n")
	}
	var defs, exprs []string
	for i, c := range f.cols {
		defs = append(defs, fmt.Sprintf("v%d %s", i+1, c.typ))
		exprs = append(exprs, c.expr)
	}
	fmt.Fprintf(&b, "CREATE TABLE %[1]s_p (id bigint PRIMARY KEY, %[2]s);\n", f.table, strings.Join(defs, ", "))
	fmt.Fprintf(&b, "CREATE TABLE %[1]s_c (parent_id bigint NOT NULL REFERENCES %[1]s_p(id), n integer NOT NULL, %[2]s, PRIMARY KEY (parent_id, n));\n",
		f.table, strings.Join(defs, ", "))
	fmt.Fprintf(&b, "INSERT INTO %s_p SELECT x, %s FROM generate_series(1::bigint, %d) x;\n", f.table, strings.Join(exprs, ", "), n)
	fmt.Fprintf(&b, "INSERT INTO %s_c SELECT o, l, %s FROM generate_series(1::bigint, %d) o, generate_series(1, %d) l, LATERAL (SELECT o * %d + l AS x) s ORDER BY o, l;\n",
		f.table, strings.Join(exprs, ", "), n, typedChildren, typedChildren+1)
	return b.String()
}

// typedMapping is family f's mapping: the parents with their children
// embedded in order, every value column.
func typedMapping(f typedFamily) string {
	var vs []string
	for i := range f.cols {
		vs = append(vs, fmt.Sprintf("v%d", i+1))
	}
	var b strings.Builder
	b.WriteString("version: 1\n")
	if f.numeric != "" {
		fmt.Fprintf(&b, "numeric: %s\n", f.numeric)
	}
	fmt.Fprintf(&b, `collections:
  - name: %[1]s
    table: %[2]s_p
    fields:
      - %[4]s
      - name: items
        embed:
          table: %[2]s_c
          join: {parent_id: id}
          orderBy: n
          fields: [n, %[3]s]
`, typedCollection(f), f.table, strings.Join(vs, ", "), strings.Join(vs, "\n      - "))
	return b.String()
}

func typedCollection(f typedFamily) string {
	return "t_" + strings.NewReplacer(" ", "_", "/", "_", "(", "", ")", "").Replace(f.name)
}

// typedConfig is the typed benchmark's knobs.
type typedConfig struct {
	skip, only bool
	parents    int // parents at the larger scale
	wide       int // orders of the numeric: double wide runs at the larger scale
	sample     int // rows per query decoded in process
	families   string
	// baseline is another denorm binary run beside A in every round
	// (before and after a change, on the same machine at the same time).
	baseline string
}

func typedFlags(c *typedConfig) {
	flag.BoolVar(&c.skip, "skip-typed", os.Getenv("SKIP_TYPED") != "", "skip the typed benchmark (T)")
	flag.BoolVar(&c.only, "typed-only", os.Getenv("TYPED_ONLY") != "", "run only the typed benchmark, into the typed key of the results file (the rest kept)")
	flag.IntVar(&c.parents, "typed", envInt("TYPED", 200_000), "parents per type family of the typed benchmark, 4 children each; a second run at a third (env TYPED)")
	flag.IntVar(&c.wide, "typed-wide", envInt("TYPED_WIDE", 300_000), "orders of the wide benchmark with numeric: double; a second run at a third (env TYPED_WIDE)")
	flag.IntVar(&c.sample, "typed-sample", envInt("TYPED_SAMPLE", 20_000), "rows per query decoded in process for the cost per value (env TYPED_SAMPLE)")
	flag.StringVar(&c.baseline, "typed-baseline", os.Getenv("TYPED_BASELINE"), "another denorm binary run beside A in every round of the typed benchmark, its time over the floor reported beside A's (env TYPED_BASELINE)")
	flag.StringVar(&c.families, "typed-families", os.Getenv("TYPED_FAMILIES"), "a regular expression: only the families it matches, and the wide runs only if it matches \"wide\" (env TYPED_FAMILIES)")
}

// TypedScale is a family's runs at one scale.
type TypedScale struct {
	Parents int     `json:"parents"`
	Rows    int64   `json:"rows"`
	Values  int64   `json:"values"`
	A       *Series `json:"a"`
	Floor   *Series `json:"floor"`
	// Ratio is A's median time over the floor's; Paired the median of
	// the rounds' ratios.
	Ratio  float64 `json:"ratio"`
	Paired float64 `json:"pairedRatio"`
	// Baseline is the -typed-baseline binary's runs, interleaved with A's;
	// BaselineRatio its median time over the floor's.
	Baseline      *Series `json:"baseline,omitempty"`
	BaselineRatio float64 `json:"baselineRatio,omitempty"`
	// CopyNs is the floor's median time per value; CPUNs denorm's CPU
	// time per value (its median run's).
	CopyNs float64 `json:"copyNsPerValue"`
	CPUNs  float64 `json:"denormCpuNsPerValue"`
	// Fixed is denorm migrate --limit 1 of the same mapping, interleaved
	// with A's: what a run costs before and after its rows (start-up,
	// the mapping, the catalog, the connections, the end), which the
	// floor, whose connections are open before its clock starts, does
	// not pay. LessFixed is A's median time less Fixed's over the
	// floor's: the rows' own ratio.
	Fixed     *Series `json:"fixed,omitempty"`
	LessFixed float64 `json:"ratioLessFixed,omitempty"`
	// V is denorm verify of A's output (the wide runs), interleaved
	// with A's; VerifyRate its median docs/s over A's.
	V          *Series `json:"v,omitempty"`
	VerifyRate float64 `json:"verifyRate,omitempty"`
	// CPUBound is the ratio A's median run could not beat on this
	// machine with the CPU it took: the machine's busy time over the run
	// (denorm's, the source's backends', anything else's) spread over
	// every core, over the floor's time. A run near its bound kept every
	// core busy, the source included: it is bound by the machine's CPU,
	// not by waiting, and comes nearer the floor only by taking less.
	CPUBound float64 `json:"cpuBoundRatio,omitempty"`
	// BudgetNs is denorm's CPU time per value at which A's bound would be
	// the goal (typedRatioGoal), the other processes taking what they
	// took in A's median run: beside CPUNs, what denorm's CPU must come
	// down to before the goal can be met on this machine.
	BudgetNs float64 `json:"denormCpuBudgetNsPerValue,omitempty"`
}

// TypedFamily is one family's results.
type TypedFamily struct {
	Family  string `json:"family"`
	Types   string `json:"types"`
	Numeric string `json:"numeric,omitempty"`
	// DecodeNs is the in-process decoding and conversion of the values
	// of a sample of the wire rows, per value: the CPU time of the
	// fastest of 5 passes (the garbage collection's included);
	// DecodeWallNs the median pass's wall time.
	DecodeNs     float64       `json:"decodeNsPerValue"`
	DecodeWallNs float64       `json:"decodeWallNsPerValue"`
	DecodeValues int           `json:"decodeSampleValues"`
	Scales       []*TypedScale `json:"scales"`
}

// TypedReport is the typed benchmark's part of bench/results.json.
type TypedReport struct {
	When    time.Time         `json:"when"`
	Commit  string            `json:"commit,omitempty"`
	Machine map[string]string `json:"machine"`
	Config  map[string]int    `json:"config"`
	// Baseline is the -typed-baseline binary, if one ran.
	Baseline string         `json:"baseline,omitempty"`
	Families []*TypedFamily `json:"families"`
}

// typedRatioGoal is issue 29's goal: every family within 1.3x of the floor.
const typedRatioGoal = 1.3

// Issue 29's goals for verify and memory, on the wide runs: verify at
// 0.75x migrate's rate at least, peak RSS of both at most 150 MB, and
// verify's no higher than migrate's.
const (
	typedVerifyGoal = 0.75
	typedPeakGoal   = 150.0 // MB
)

// typedChecks are the typed report's targets: each family's time over
// the floor's at each scale; on the wide runs verify's rate over
// migrate's and both peaks.
func typedChecks(t *TypedReport) []Check {
	var out []Check
	for _, f := range t.Families {
		for _, s := range f.Scales {
			out = append(out, Check{Goal: "29.1", Name: fmt.Sprintf("typed %s, %d: A time / floor time", f.Family, s.Parents),
				Value: s.Ratio, Target: fmt.Sprintf("<= %.1f", typedRatioGoal), Met: s.Ratio <= typedRatioGoal})
			if s.V == nil {
				continue
			}
			name := fmt.Sprintf("%s, %d", f.Family, s.Parents)
			aMB, vMB := s.A.PeakMiB*1.048576, s.V.PeakMiB*1.048576
			out = append(out,
				Check{Goal: "29.3", Name: name + ": verify docs/s / migrate docs/s", Value: s.VerifyRate,
					Target: fmt.Sprintf(">= %.2f", typedVerifyGoal), Met: s.VerifyRate >= typedVerifyGoal},
				Check{Goal: "29.2", Name: name + ": migrate peak RSS (MB)", Value: aMB,
					Target: fmt.Sprintf("<= %.0f", typedPeakGoal), Met: aMB <= typedPeakGoal},
				Check{Goal: "29.2", Name: name + ": verify peak RSS (MB)", Value: vMB,
					Target: fmt.Sprintf("<= %.0f", typedPeakGoal), Met: vMB <= typedPeakGoal},
				Check{Goal: "29.3", Name: name + ": verify peak RSS / migrate peak RSS", Value: vMB / aMB,
					Target: "<= 1", Met: vMB <= aMB})
		}
	}
	return out
}

// finishTyped computes a scale's medians and ratios from its runs.
func finishTyped(s *TypedScale) {
	s.A.finish()
	s.Floor.finish()
	s.Ratio = s.A.Median.Seconds / s.Floor.Median.Seconds
	s.Paired, _ = paired(s.A, s.Floor)
	if s.Values > 0 {
		s.CopyNs = s.Floor.Median.Seconds * 1e9 / float64(s.Values)
		s.CPUNs = s.A.Median.CPUSeconds * 1e9 / float64(s.Values)
	}
	if s.Baseline != nil && len(s.Baseline.Runs) > 0 {
		s.Baseline.finish()
		s.BaselineRatio = s.Baseline.Median.Seconds / s.Floor.Median.Seconds
	}
	if s.Fixed != nil && len(s.Fixed.Runs) > 0 {
		s.Fixed.finish()
		s.LessFixed = (s.A.Median.Seconds - s.Fixed.Median.Seconds) / s.Floor.Median.Seconds
	}
	if s.V != nil && len(s.V.Runs) > 0 {
		s.V.finish()
		s.VerifyRate = s.V.DocsPS / s.A.DocsPS
	}
	if m := s.A.Median.MachineCPUSeconds; m > 0 {
		n := float64(machineCores())
		s.CPUBound = m / n / s.Floor.Median.Seconds
		if s.Values > 0 {
			others := m - s.A.Median.CPUSeconds
			s.BudgetNs = max(n*typedRatioGoal*s.Floor.Median.Seconds-others, 0) * 1e9 / float64(s.Values)
		}
	}
}

func runTyped(ctx context.Context, c config, tmp string) (*TypedReport, error) {
	admin := os.Getenv("DENORM_TEST_PG")
	tc := c.typed
	var match *regexp.Regexp
	if tc.families != "" {
		var err error
		if match, err = regexp.Compile(tc.families); err != nil {
			return nil, fmt.Errorf("TYPED_FAMILIES: %w", err)
		}
	}
	t := &TypedReport{When: time.Now().UTC(), Commit: gitCommit(), Machine: machine(ctx, admin),
		Config: map[string]int{"parents": tc.parents, "children": typedChildren, "wideOrders": tc.wide, "reps": c.reps, "sample": tc.sample}}
	if tc.baseline != "" {
		if _, err := os.Stat(tc.baseline); err != nil {
			return nil, fmt.Errorf("TYPED_BASELINE: %w", err)
		}
		t.Baseline = tc.baseline
	}
	scales := []int{tc.parents, max(tc.parents/3, 1)}
	dbs := []string{"bench_typed", "bench_typed_third"}
	var urls []string
	for i, n := range scales {
		if typedTables(match) == nil {
			break // only the wide runs: their databases are their own
		}
		u, err := typedDB(ctx, admin, dbs[i], n, match)
		if err != nil {
			return nil, err
		}
		urls = append(urls, u)
	}
	dir := filepath.Join(tmp, "typed")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, f := range typedFamilies {
		if match != nil && !match.MatchString(f.name) {
			continue
		}
		mapping := filepath.Join(dir, typedCollection(f)+".yaml")
		if err := os.WriteFile(mapping, []byte(typedMapping(f)), 0o644); err != nil {
			return nil, err
		}
		var types []string
		for _, col := range f.cols {
			if !slices.Contains(types, col.typ) {
				types = append(types, col.typ)
			}
		}
		fam := &TypedFamily{Family: f.name, Types: strings.Join(types, ", "), Numeric: f.numeric}
		files := []string{typedCollection(f) + ".jsonl"}
		if err := typedFamilyRuns(ctx, c, fam, mapping, files, scales, urls, filepath.Join(dir, "out"), isValueColumn, false); err != nil {
			return nil, fmt.Errorf("typed %s: %w", f.name, err)
		}
		t.Families = append(t.Families, fam)
	}
	if match == nil || match.MatchString("wide") {
		wscales := []int{tc.wide, max(tc.wide/3, 1)}
		var wurls []string
		for i, n := range wscales {
			u, err := wideDB(ctx, admin, []string{"bench_wide_typed", "bench_wide_typed_third"}[i], n)
			if err != nil {
				return nil, err
			}
			wurls = append(wurls, u)
		}
		fam := &TypedFamily{Family: typedWideFamily, Types: "numeric(p,s), date, char(n), varchar, integers", Numeric: "double"}
		all := func(string) bool { return true }
		if err := typedFamilyRuns(ctx, c, fam, wideDoubleMapping, []string{"orders.jsonl"}, wscales, wurls, filepath.Join(dir, "wide"), all, true); err != nil {
			return nil, fmt.Errorf("wide numeric: double: %w", err)
		}
		t.Families = append(t.Families, fam)
	}
	t.Machine["load at end"] = loadAvg()
	return t, nil
}

const wideDoubleMapping = "bench/wide-double.yaml"

// typedWideFamily names the wide runs with numeric: double.
const typedWideFamily = "wide orders+lines, double"

// isValueColumn tells a family's value columns from its keys.
func isValueColumn(name string) bool { return !slices.Contains([]string{"id", "parent_id", "n"}, name) }

// typedFamilyRuns runs A and the floor of one family at each scale,
// interleaved, and times the decoding of its values in process; with
// verify, denorm verify of each A's output right after it.
func typedFamilyRuns(ctx context.Context, c config, fam *TypedFamily, mapping string, files []string, scales []int, urls []string, out string, value func(string) bool, verify bool) error {
	for i, n := range scales {
		db := urls[i]
		plan, err := resolvePlan(ctx, db, mapping)
		if err != nil {
			return err
		}
		var reads [][]string
		for _, cp := range plan.Collections {
			reads = append(reads, extract.FullReads(cp))
		}
		s := &TypedScale{Parents: n, A: &Series{Name: "A", What: "denorm migrate into a directory"}, Floor: &Series{Name: "floor", What: floorWhat},
			Fixed: &Series{Name: "fixed", What: "denorm migrate --limit 1 into a directory: a run's cost besides its rows"}}
		if s.Rows, s.Values, err = countValues(ctx, db, plan, value); err != nil {
			return err
		}
		if i == 0 {
			if err := decodeCost(ctx, db, plan, reads, c.typed.sample, value, fam); err != nil {
				return err
			}
		}
		// untimed, as benchSet does
		if _, err := floorRun(ctx, db, reads); err != nil {
			return err
		}
		for r := 0; r < c.reps; r++ {
			runA := func() error {
				res, err := denormDir(c.bin, mapping, db, out, files...)
				if err != nil {
					return err
				}
				s.A.Runs = append(s.A.Runs, res)
				if !verify {
					return nil
				}
				if s.V == nil {
					s.V = &Series{Name: "V", What: "denorm verify of A's directory"}
				}
				v, err := denormVerify(c.bin, mapping, db, out, res.Docs)
				if err == nil {
					s.V.Runs = append(s.V.Runs, v)
				}
				return err
			}
			runFloor := func() error {
				res, err := floorRun(ctx, db, reads)
				if err == nil {
					s.Floor.Runs = append(s.Floor.Runs, res)
				}
				return err
			}
			runFixed := func() error {
				res, err := denormFixed(c.bin, mapping, db, out+"-fixed")
				if err == nil {
					s.Fixed.Runs = append(s.Fixed.Runs, res)
				}
				return err
			}
			steps := []func() error{runA, runFloor, runFixed}
			if c.typed.baseline != "" {
				if s.Baseline == nil {
					s.Baseline = &Series{Name: "baseline", What: "denorm migrate into a directory, the binary " + c.typed.baseline}
				}
				steps = append(steps, func() error {
					res, err := denormDir(c.typed.baseline, mapping, db, out, files...)
					if err == nil {
						s.Baseline.Runs = append(s.Baseline.Runs, res)
					}
					return err
				})
			}
			for j := range steps {
				if err := steps[(r+j)%len(steps)](); err != nil {
					return err
				}
			}
		}
		finishTyped(s)
		log.Printf("  typed %-36s %8d parents: A %.2fs, floor %.2fs, %.2fx (CPU-bound %.2fx)", fam.Family, n, s.A.Median.Seconds, s.Floor.Median.Seconds, s.Ratio, s.CPUBound)
		if s.Baseline != nil {
			log.Printf("  typed %-36s %8d parents: baseline %.2fs, %.2fx", fam.Family, n, s.Baseline.Median.Seconds, s.BaselineRatio)
		}
		if s.V != nil {
			log.Printf("  typed %-36s %8d parents: verify %.2fs, %.2fx migrate's rate; peak RSS migrate %.0f MiB, verify %.0f MiB", fam.Family, n, s.V.Median.Seconds, s.VerifyRate, s.A.PeakMiB, s.V.PeakMiB)
		}
		fam.Scales = append(fam.Scales, s)
	}
	return nil
}

// resolvePlan resolves mapping against db.
func resolvePlan(ctx context.Context, db, mapping string) (*mappings.Plan, error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	f, err := mappings.Load(mapping)
	if err != nil {
		return nil, err
	}
	cat, err := extract.ReadCatalog(ctx, conn, f.Tables())
	if err != nil {
		return nil, err
	}
	return mappings.Resolve(f, cat)
}

// planNodes are the nodes of plan in the order of the queries
// extract.FullReads returns for each collection.
func planNodes(cp *mappings.CollectionPlan) []*mappings.Node {
	out := []*mappings.Node{cp.Root}
	var walk func(n *mappings.Node)
	walk = func(n *mappings.Node) {
		for _, c := range n.Children {
			out = append(out, c)
			walk(c)
		}
	}
	walk(cp.Root)
	return out
}

// valueCols are the indexes of n's value columns.
func valueCols(n *mappings.Node, value func(string) bool) []int {
	var out []int
	for i, c := range n.Columns {
		if value(c.Name) {
			out = append(out, i)
		}
	}
	return out
}

// countValues counts the rows the plan reads and their non-NULL values.
func countValues(ctx context.Context, db string, plan *mappings.Plan, value func(string) bool) (rows, values int64, err error) {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	for _, cp := range plan.Collections {
		for _, n := range planNodes(cp) {
			counts := []string{"count(*)"}
			for _, i := range valueCols(n, value) {
				counts = append(counts, "count("+pgx.Identifier{n.Columns[i].Name}.Sanitize()+")")
			}
			var r, v int64
			q := fmt.Sprintf("SELECT %s, %s FROM %s", counts[0], strings.Join(append(counts[1:], "0"), " + "), pgx.Identifier{n.Table.Name}.Sanitize())
			if err := conn.QueryRow(ctx, q).Scan(&r, &v); err != nil {
				return 0, 0, fmt.Errorf("%s: %w", q, err)
			}
			rows += r
			values += v
		}
	}
	return rows, values, nil
}

// decodeCost times, in process, the decoding and conversion of the value
// columns of the first sample rows of each read: the median of 5 passes
// over the captured wire rows, per value.
func decodeCost(ctx context.Context, db string, plan *mappings.Plan, reads [][]string, sample int, value func(string) bool, fam *TypedFamily) error {
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var wall, cpu time.Duration
	values := 0
	for ci, cp := range plan.Collections {
		nodes := planNodes(cp)
		if len(nodes) != len(reads[ci]) {
			return fmt.Errorf("%d nodes, %d reads", len(nodes), len(reads[ci]))
		}
		for qi, n := range nodes {
			rows, err := extract.CaptureRows(ctx, conn, reads[ci][qi], sample)
			if err != nil {
				return err
			}
			cols := valueCols(n, value)
			var walls, cpus []time.Duration
			var v int
			runtime.GC()
			for range 5 {
				cpu0 := processCPU()
				start := time.Now()
				if v, err = rows.Decode(n, cols); err != nil {
					return err
				}
				walls = append(walls, time.Since(start))
				cpus = append(cpus, processCPU()-cpu0)
			}
			slices.Sort(walls)
			slices.Sort(cpus)
			wall += walls[len(walls)/2]
			cpu += cpus[0]
			values += v
		}
	}
	fam.DecodeValues = values
	if values > 0 {
		fam.DecodeNs = float64(cpu.Nanoseconds()) / float64(values)
		fam.DecodeWallNs = float64(wall.Nanoseconds()) / float64(values)
	}
	return nil
}

// processCPU is the CPU time (user and system) of this process so far:
// the decoding's own work and its garbage collection's, which a busy
// machine's other processes do not lengthen as they do wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// typedDB is a database holding every family's tables (those match
// selects) with n parents.
func typedDB(ctx context.Context, admin, name string, n int, match *regexp.Regexp) (string, error) {
	t0 := time.Now()
	tables := typedTables(match)
	desc := fmt.Sprintf("typed %d %s", n, strings.Join(tables, " "))
	if reuse {
		// A database generated for more families (a full run's) serves a
		// subset too, rather than be replaced by one of the subset.
		if have, err := dbComment(ctx, admin, name); err == nil && typedHolds(have, n, tables) {
			log.Printf("  %s: reusing (%s)", name, strings.TrimPrefix(have, benchComment))
			return dbURL(admin, name)
		}
	}
	db, reused, err := benchDB(ctx, admin, name, desc)
	if err != nil || reused {
		return db, err
	}
	for _, f := range typedFamilies {
		if !slices.Contains(tables, f.table) {
			continue
		}
		tables = slices.DeleteFunc(tables, func(t string) bool { return t == f.table })
		if err := exec1(ctx, db, typedSQL(f, n)); err != nil {
			return "", fmt.Errorf("generate %s: %w", f.table, err)
		}
	}
	if err := finishDB(ctx, admin, name, db, desc); err != nil {
		return "", err
	}
	log.Printf("  %s: %d parents, %d children per type family in %.1fs", name, n, n*typedChildren, time.Since(t0).Seconds())
	return db, nil
}

// typedTables are the tables of the families match picks (all for nil).
func typedTables(match *regexp.Regexp) []string {
	var tables []string
	for _, f := range typedFamilies {
		if (match == nil || match.MatchString(f.name)) && !slices.Contains(tables, f.table) {
			tables = append(tables, f.table)
		}
	}
	return tables
}

// typedHolds reports whether a typed database's comment says it holds
// tables at n parents.
func typedHolds(comment string, n int, tables []string) bool {
	f := strings.Fields(strings.TrimPrefix(comment, benchComment))
	if len(f) < 2 || f[0] != "typed" || f[1] != strconv.Itoa(n) {
		return false
	}
	for _, t := range tables {
		if !slices.Contains(f[2:], t) {
			return false
		}
	}
	return true
}

// gitCommit is the commit the benchmark runs at, with "+dirty" when the
// work tree differs from it.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if err := exec.Command("git", "diff", "--quiet", "HEAD").Run(); err != nil {
		c += "+dirty"
	}
	return c
}

// checkBinary refuses a denorm binary built at another commit than the
// work tree's (its "denorm version" says which): the results are
// recorded under the tree's commit (gitCommit), and "go run ./bench"
// after a commit, without "make build" (which "make bench" runs), would
// otherwise measure the last build under the new commit's name. A tree
// with changes not committed cannot be told from its binary's commit; it
// is recorded as +dirty.
func checkBinary(bin string) error {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return nil // not a git checkout: nothing to compare with
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s version: %w (make build)", bin, err)
	}
	built := ""
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "commit:"); ok {
			built = strings.TrimSpace(v)
		}
	}
	if want := strings.TrimSpace(string(head)); built != want {
		return fmt.Errorf("%s was built at commit %q, the tree is at %s: run make build (make bench builds it)", bin, built, want)
	}
	return nil
}

// printTyped writes the typed table.
func printTyped(w io.Writer, t *TypedReport) {
	if t == nil {
		return
	}
	fmt.Fprintln(w, "typed benchmark (T): denorm migrate / floor per type family, decode+convert per value in process beside COPY's per value")
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	base := ""
	if t.Baseline != "" {
		base = "baseline ratio\t"
	}
	fmt.Fprintln(tw, "family\tparents\tvalues\tA s\tfloor s\tratio\tfixed s\tratio less fixed\tdecode CPU ns/value\tCOPY ns/value\tA CPU ns/value\tCPU-bound ratio\tA CPU budget ns/value\t"+base)
	for _, f := range t.Families {
		for i, s := range f.Scales {
			dec := ""
			if i == 0 {
				dec = fmt.Sprintf("%.1f", f.DecodeNs)
			}
			b := ""
			if t.Baseline != "" {
				b = fmt.Sprintf("%.2f\t", s.BaselineRatio)
			}
			fixed := "\t\t"
			if s.Fixed != nil && len(s.Fixed.Runs) > 0 {
				fixed = fmt.Sprintf("%.3f\t%.2f\t", s.Fixed.Median.Seconds, s.LessFixed)
			}
			bound := "\t\t"
			if s.CPUBound > 0 {
				bound = fmt.Sprintf("%.2f\t%.1f\t", s.CPUBound, s.BudgetNs)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%.2f\t%.2f\t%s%s\t%.1f\t%.1f\t%s%s\n", f.Family, s.Parents, s.Values, s.A.Median.Seconds, s.Floor.Median.Seconds, s.Ratio, fixed, dec, s.CopyNs, s.CPUNs, bound, b)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "typed: at %s, load %s .. %s\n", t.Commit, t.Machine["load at start"], t.Machine["load at end"])
	if t.Baseline != "" {
		fmt.Fprintf(w, "typed: baseline %s, interleaved with A in every round\n", t.Baseline)
	}
	fmt.Fprintln(w)
}

// typedOnly runs only the typed benchmark (TYPED_ONLY=1): its results
// replace the typed key and the issue 29.1 checks of the results file, the
// rest of the file is kept; the report returned holds only its checks,
// which decide the exit status.
func typedOnly(ctx context.Context, c config, tmp string) (*Report, error) {
	rep := &Report{}
	if data, err := os.ReadFile(c.out); err == nil {
		if err := json.Unmarshal(data, rep); err != nil {
			return nil, fmt.Errorf("%s: %w", c.out, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if rep.Series == nil {
		rep.Series, rep.Ratios, rep.Machine = map[string]*Series{}, map[string]float64{}, map[string]string{}
	}
	log.Printf("typed: %d parents per type family, %d children each, and a third of that", c.typed.parents, typedChildren)
	t, err := runTyped(ctx, c, tmp)
	if err != nil {
		return nil, err
	}
	rep.Typed = t
	checks := typedChecks(t)
	rep.Checks = append(slices.DeleteFunc(rep.Checks, func(ch Check) bool { return strings.HasPrefix(ch.Goal, "29.") }), checks...)
	printTyped(os.Stdout, t)
	printChecks(os.Stdout, checks)
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.out, append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	log.Printf("wrote %s (its typed key)", c.out)
	if c.chart != "" && len(rep.Series) > 0 {
		if err := writeChart(rep, c.chart); err != nil {
			return nil, err
		}
		log.Printf("wrote %s", c.chart)
	}
	return &Report{Typed: t, Checks: checks}, nil
}
