package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/denorm/denorm/mappings"
)

// typesTableRows is the first cell of every row of docs/types.md's table
// of PostgreSQL types.
func typesTableRows(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../docs/types.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	in := false
	for _, l := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(l, "| PostgreSQL | document (BSON) |"):
			in = true
		case in && strings.HasPrefix(l, "| ---"):
		case in && strings.HasPrefix(l, "| "):
			rows = append(rows, strings.TrimSpace(strings.Split(l, "|")[1]))
		case in:
			in = false
		}
	}
	if len(rows) < 10 {
		t.Fatalf("docs/types.md: %d rows in the types table, want its table of PostgreSQL types", len(rows))
	}
	return rows
}

// typesTableNames are the column types (as the typed benchmark's columns
// name them) each name of the Types table's first cells stands for.
var typesTableNames = map[string]func(typ string) bool{
	"smallint":                   func(typ string) bool { return typ == "smallint" },
	"integer":                    func(typ string) bool { return typ == "integer" },
	"bigint":                     func(typ string) bool { return typ == "bigint" },
	"numeric":                    func(typ string) bool { return strings.HasPrefix(typ, "numeric") },
	"real":                       func(typ string) bool { return typ == "real" },
	"double precision":           func(typ string) bool { return typ == "double precision" },
	"text":                       func(typ string) bool { return typ == "text" },
	"varchar":                    func(typ string) bool { return strings.HasPrefix(typ, "varchar(") },
	"char(n)":                    func(typ string) bool { return strings.HasPrefix(typ, "char(") },
	"boolean":                    func(typ string) bool { return typ == "boolean" },
	"date":                       func(typ string) bool { return typ == "date" },
	"timestamp":                  func(typ string) bool { return typ == "timestamp" },
	"timestamptz":                func(typ string) bool { return typ == "timestamptz" },
	"uuid":                       func(typ string) bool { return typ == "uuid" },
	"bytea":                      func(typ string) bool { return typ == "bytea" },
	"json":                       func(typ string) bool { return typ == "json" },
	"jsonb":                      func(typ string) bool { return typ == "jsonb" },
	"arrays":                     func(typ string) bool { return strings.HasSuffix(typ, "[]") },
	"domains":                    func(typ string) bool { return strings.HasPrefix(typ, "typed_") && typ != "typed_status" },
	"enums and every other type": func(typ string) bool { return typ == "typed_status" },
}

// TestTypedCoversTypesTable holds the typed benchmark to the Types table:
// every row of it is a family's (but the ones named as not covered, with
// their reason), each type a row names is a column of such a family, and
// every family stands for rows the table has.
func TestTypedCoversTypesTable(t *testing.T) {
	rows := typesTableRows(t)
	for _, row := range rows {
		if _, ok := typedNotCovered[row]; ok {
			continue
		}
		var fams []typedFamily
		for _, f := range typedFamilies {
			if slices.Contains(f.covers, row) {
				fams = append(fams, f)
			}
		}
		if len(fams) == 0 {
			t.Errorf("Types table row %q: no family of the typed benchmark covers it", row)
			continue
		}
		names := strings.Split(row, ", ")
		if strings.HasPrefix(row, "enums") {
			names = []string{row}
		}
		for _, name := range names {
			is, ok := typesTableNames[name]
			if !ok {
				t.Errorf("Types table row %q: %q is a type this test does not know: add it to typesTableNames", row, name)
				continue
			}
			found := false
			for _, f := range fams {
				for _, c := range f.cols {
					found = found || is(c.typ)
				}
			}
			if !found {
				t.Errorf("Types table row %q: no column of type %s in its families", row, name)
			}
		}
	}
	for _, f := range typedFamilies {
		for _, c := range f.covers {
			if !slices.Contains(rows, c) {
				t.Errorf("family %s covers %q, not a row of the Types table", f.name, c)
			}
		}
	}
	for row := range typedNotCovered {
		if !slices.Contains(rows, row) {
			t.Errorf("typedNotCovered names %q, not a row of the Types table", row)
		}
	}
	// Every numeric mode, and numerics of several precisions.
	var modes []string
	for _, f := range typedFamilies {
		if f.table == "t_numeric" {
			modes = append(modes, f.numeric)
		}
	}
	slices.Sort(modes)
	if !slices.Equal(modes, []string{"decimal", "double", "string"}) {
		t.Errorf("numeric families run in modes %v, want decimal, double and string", modes)
	}
	for _, typ := range []string{"numeric(15,2)", "numeric(38,10)", "numeric"} {
		if !slices.ContainsFunc(numericCols, func(c typedColumn) bool { return c.typ == typ }) {
			t.Errorf("no numeric column of type %s", typ)
		}
	}
}

// TestTypedSQLAndMapping checks the generated SQL creates and fills both
// tables of a family with every column, and that the mapping embeds the
// children with every value column in the family's numeric mode.
func TestTypedSQLAndMapping(t *testing.T) {
	names := map[string]bool{}
	for _, f := range typedFamilies {
		if names[typedCollection(f)] {
			t.Errorf("two families named %s", typedCollection(f))
		}
		names[typedCollection(f)] = true
		sql := typedSQL(f, 123)
		for _, want := range []string{
			"CREATE TABLE " + f.table + "_p (id bigint PRIMARY KEY, v1 ",
			"CREATE TABLE " + f.table + "_c (parent_id bigint NOT NULL REFERENCES " + f.table + "_p(id), n integer NOT NULL, v1 ",
			"INSERT INTO " + f.table + "_p SELECT x, ", "generate_series(1::bigint, 123)", "generate_series(1, 4) l",
		} {
			if !strings.Contains(sql, want) {
				t.Errorf("%s: the SQL has no %q:\n%s", f.name, want, sql)
			}
		}
		var inserts []string
		for _, l := range strings.Split(sql, "\n") {
			if strings.HasPrefix(l, "INSERT INTO "+f.table) {
				inserts = append(inserts, l)
			}
		}
		if len(inserts) != 2 {
			t.Fatalf("%s: %d INSERTs, want 2:\n%s", f.name, len(inserts), sql)
		}
		for i, c := range f.cols {
			if !strings.Contains(inserts[0], ", "+c.expr) || !strings.Contains(inserts[1], ", "+c.expr) {
				t.Errorf("%s: column v%d's expression is not in both INSERTs", f.name, i+1)
			}
			if !strings.Contains(sql, " "+c.typ) {
				t.Errorf("%s: no column of type %s", f.name, c.typ)
			}
		}
		if f.setup != "" && !strings.HasPrefix(sql, f.setup) {
			t.Errorf("%s: the setup does not come first", f.name)
		}
		file, err := mappings.Parse(typedCollection(f)+".yaml", []byte(typedMapping(f)))
		if err != nil {
			t.Fatalf("%s: %v\n%s", f.name, err, typedMapping(f))
		}
		want := mappings.NumericMode(f.numeric)
		if want == "" {
			want = mappings.NumericDecimal
		}
		if file.Numeric != want {
			t.Errorf("%s: numeric mode %q, want %q", f.name, file.Numeric, want)
		}
		if len(file.Collections) != 1 || file.Collections[0].Table != f.table+"_p" {
			t.Fatalf("%s: collections %v", f.name, file.Collections)
		}
		m := typedMapping(f)
		for i := range f.cols {
			if strings.Count(m, "v"+strconv.Itoa(i+1)) < 2 {
				t.Errorf("%s: v%d is not a field of both the parent and its children:\n%s", f.name, i+1, m)
			}
		}
		if !strings.Contains(m, "table: "+f.table+"_c") {
			t.Errorf("%s: the children are not embedded:\n%s", f.name, m)
		}
	}
}

// TestTypedChecks checks the ratios and the goal: A's median over the
// floor's, each scale a check of its own, met up to 1.3.
func TestTypedChecks(t *testing.T) {
	scale := func(parents int, a, floor []float64, values int64) *TypedScale {
		s := &TypedScale{Parents: parents, Values: values, A: &Series{}, Floor: &Series{}}
		for i := range a {
			s.A.Runs = append(s.A.Runs, Result{Docs: 10, Seconds: a[i], CPUSeconds: 2 * a[i]})
			s.Floor.Runs = append(s.Floor.Runs, Result{Docs: 50, Seconds: floor[i]})
		}
		finishTyped(s)
		return s
	}
	big := scale(300, []float64{2.4, 2.0, 2.2}, []float64{2.0, 1.6, 1.8}, 1_800_000_000)
	if big.A.Median.Seconds != 2.2 || big.Floor.Median.Seconds != 1.8 {
		t.Fatalf("medians %v / %v, want 2.2 / 1.8", big.A.Median.Seconds, big.Floor.Median.Seconds)
	}
	if got := big.Ratio; got < 1.2222 || got > 1.2223 {
		t.Errorf("ratio %v, want 2.2/1.8", got)
	}
	if got := big.CopyNs; got != 1 {
		t.Errorf("COPY ns per value %v, want 1 (1.8 s over 1.8e9 values)", got)
	}
	if got := big.CPUNs; got < 2.4444 || got > 2.4445 {
		t.Errorf("denorm CPU ns per value %v, want 4.4 s (the median run's) over 1.8e9 values", got)
	}
	if got := big.Paired; got < 1.2222 || got > 1.2223 {
		t.Errorf("paired ratio %v, want the median of 1.2, 1.25, 1.2222", got)
	}
	based := &TypedScale{A: &Series{Runs: []Result{{Docs: 10, Seconds: 1}}}, Floor: &Series{Runs: []Result{{Docs: 50, Seconds: 2}}},
		Baseline: &Series{Runs: []Result{{Docs: 10, Seconds: 3}, {Docs: 10, Seconds: 5}, {Docs: 10, Seconds: 4}}}}
	finishTyped(based)
	if based.BaselineRatio != 2 {
		t.Errorf("baseline ratio %v, want its median 4 s over the floor's 2 s", based.BaselineRatio)
	}
	small := scale(100, []float64{1.4}, []float64{1.0}, 0)
	if small.Baseline != nil || small.BaselineRatio != 0 {
		t.Errorf("no baseline ran, yet ratio %v", small.BaselineRatio)
	}
	if small.Fixed != nil || small.LessFixed != 0 {
		t.Errorf("no fixed runs, yet ratio less fixed %v", small.LessFixed)
	}
	fixed := &TypedScale{A: &Series{Runs: []Result{{Docs: 10, Seconds: 1.5}}}, Floor: &Series{Runs: []Result{{Docs: 50, Seconds: 1}}},
		Fixed: &Series{Runs: []Result{{Docs: 1, Seconds: 0.3}, {Docs: 1, Seconds: 0.1}, {Docs: 1, Seconds: 0.2}}}}
	finishTyped(fixed)
	if got := fixed.LessFixed; got < 1.2999 || got > 1.3001 || fixed.Ratio != 1.5 {
		t.Errorf("ratio %v, less fixed %v: want 1.5, and 1.3 (A's 1.5 s less the fixed runs' median 0.2 s, over the floor's 1 s)", fixed.Ratio, got)
	}
	var out strings.Builder
	printTyped(&out, &TypedReport{Families: []*TypedFamily{{Family: "date", Scales: []*TypedScale{fixed, small}}}})
	if !strings.Contains(out.String(), "ratio less fixed") || !strings.Contains(out.String(), "0.200") || !strings.Contains(out.String(), "1.30") {
		t.Errorf("the table lacks the fixed cost and the ratio less it:\n%s", out.String())
	}
	rep := &TypedReport{Families: []*TypedFamily{{Family: "date", Scales: []*TypedScale{big, small}}}}
	checks := typedChecks(rep)
	if len(checks) != 2 {
		t.Fatalf("%d checks, want one per scale", len(checks))
	}
	if !checks[0].Met || checks[1].Met {
		t.Errorf("checks %+v: want 1.22 met and 1.4 not met", checks)
	}
	for _, c := range checks {
		if c.Goal != "29.1" || c.Target != "<= 1.3" || !strings.Contains(c.Name, "date") {
			t.Errorf("check %+v", c)
		}
	}
}

// TestTypedVerifyChecks: on a scale with verify runs, the rate is
// verify's median docs/s over migrate's, and the checks hold it to 0.75
// and both peaks to 150 MB, verify's to migrate's.
func TestTypedVerifyChecks(t *testing.T) {
	s := &TypedScale{Parents: 1000,
		A:     &Series{Runs: []Result{{Docs: 1000, Seconds: 5, PeakKiB: 130 << 10}, {Docs: 1000, Seconds: 4, PeakKiB: 128 << 10}, {Docs: 1000, Seconds: 6, PeakKiB: 132 << 10}}},
		Floor: &Series{Runs: []Result{{Docs: 1000, Seconds: 4}}},
		V:     &Series{Runs: []Result{{Docs: 1000, Seconds: 6.25, PeakKiB: 120 << 10}, {Docs: 1000, Seconds: 7, PeakKiB: 121 << 10}, {Docs: 1000, Seconds: 6, PeakKiB: 119 << 10}}}}
	finishTyped(s)
	if s.VerifyRate != 0.8 {
		t.Fatalf("verify rate %v, want 160 docs/s over 200 (the medians, 6.25 s and 5 s)", s.VerifyRate)
	}
	rep := &TypedReport{Families: []*TypedFamily{{Family: "wide", Scales: []*TypedScale{s}}}}
	met := map[string]bool{}
	for _, c := range typedChecks(rep) {
		met[c.Goal+" "+c.Name] = c.Met
	}
	want := map[string]bool{
		"29.1 typed wide, 1000: A time / floor time":          true,
		"29.3 wide, 1000: verify docs/s / migrate docs/s":     true,
		"29.2 wide, 1000: migrate peak RSS (MB)":              true,
		"29.2 wide, 1000: verify peak RSS (MB)":               true,
		"29.3 wide, 1000: verify peak RSS / migrate peak RSS": true,
	}
	if len(met) != len(want) {
		t.Errorf("checks %v, want %v", met, want)
	}
	for k, v := range want {
		if m, ok := met[k]; !ok || m != v {
			t.Errorf("check %q: met %v (there: %v), want %v", k, m, ok, v)
		}
	}
	// Slower than 0.75x, and above migrate's peak: not met.
	s.V.Runs = []Result{{Docs: 1000, Seconds: 7, PeakKiB: 140 << 10}}
	finishTyped(s)
	for _, c := range typedChecks(rep) {
		if strings.Contains(c.Name, "verify docs/s") && (c.Met || c.Value != 5.0/7) {
			t.Errorf("check %+v: want 0.71, not met", c)
		}
		if strings.Contains(c.Name, "verify peak RSS /") && c.Met {
			t.Errorf("check %+v: verify's peak above migrate's, met", c)
		}
	}
}

// TestTypedHolds: a typed database serves a run whose tables it holds at
// the same number of parents, a subset of a full run's too, and no other.
func TestTypedHolds(t *testing.T) {
	full := benchComment + "typed 200000 t_int t_date t_uuid"
	for _, tc := range []struct {
		comment string
		n       int
		tables  []string
		want    bool
	}{
		{full, 200000, []string{"t_int", "t_date", "t_uuid"}, true},
		{full, 200000, []string{"t_date"}, true},
		{full, 66666, []string{"t_date"}, false},
		{full, 200000, []string{"t_date", "t_json"}, false},
		{benchComment + "typed 200000 ", 200000, []string{"t_date"}, false},
		{benchComment + "wide 200000", 200000, nil, false},
		{"", 200000, nil, false},
	} {
		if got := typedHolds(tc.comment, tc.n, tc.tables); got != tc.want {
			t.Errorf("typedHolds(%q, %d, %v) = %v, want %v", tc.comment, tc.n, tc.tables, got, tc.want)
		}
	}
}
