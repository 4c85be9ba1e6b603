// Command bench is denorm's side-by-side benchmark (make bench). It runs
// against the throwaway PostgreSQL and FerretDB that scripts/testenv.sh
// starts (DENORM_TEST_PG, DENORM_TEST_MONGO), generates the person, blog
// and wide benchmarks' tables at scale inside PostgreSQL, and runs,
// interleaved and repeated, what a user could run instead of denorm:
//
//	A      denorm migrate of the person example into a directory target
//	B      PostgreSQL building the same documents (json_agg with GROUP BY +
//	       JOIN, and with LATERAL; the better of the two), COPY ... TO STDOUT
//	       into a file
//	floor  the source sending every row the mapping reads, in denorm's
//	       order, COPY ... (FORMAT binary) into a discarding writer (floor.go)
//	C      a naive loader: one query per person for its children (a subset)
//	V, P   denorm verify of A's output, denorm plan of the same data
//	D      denorm migrate into FerretDB
//	E      the same documents, already built, inserted into FerretDB with plain
//	       unordered insertMany batches: the target's own ceiling
//	F      peak RSS of A at SCALE and 4 x SCALE persons
//	blog   A, B and floor runs of the blog example (buckets of 100), and A on a
//	       quarter of the data (peak RSS)
//	wide   A, B and floor runs of orders with wide lines (wide.go), and A on a
//	       quarter of the data (peak RSS)
//	K      A on the person data keyed by an integer, a uuid and two integers,
//	       interleaved (keys.go)
//	T      the typed benchmark: per type family of the Types table, A and
//	       the floor at two scales, and the decoding's cost per value
//	       (typed.go); the wide orders with numeric: double too
//	SF, SD sync: --follow under a steady write load, and a diff pass against
//	       verify over unchanged documents (sync.go)
//
// Every figure compared is a ratio of runs made side by side; medians of
// REPS repetitions are reported. Results go to stdout as a table, each
// target met or NOT MET, and to bench/results.json; the exit status is 1
// when a target is not met.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/procmem"
)

type config struct {
	scale       int // persons for A, B, C, V, P and F
	targetScale int // persons for D and E
	naive       int // persons C reads
	posts       int // blog posts
	comments    int // comments per post
	wide        int // orders of the wide benchmark
	reps        int
	bin         string
	out         string
	chart       string
	chartOnly   bool
	skipF       bool
	skipBlog    bool
	skipWide    bool
	skipTarget  bool
	skipPerson  bool
	skipKeys    bool
	sync        syncConfig
	ceiling     ceilingConfig
	typed       typedConfig
}

func main() {
	var c config
	flag.IntVar(&c.scale, "scale", envInt("SCALE", 1_000_000), "persons (env SCALE)")
	flag.IntVar(&c.targetScale, "target-scale", envInt("TARGET_SCALE", 100_000), "persons written to FerretDB in D and E (env TARGET_SCALE)")
	flag.IntVar(&c.naive, "naive", envInt("NAIVE", 20_000), "persons the naive loader C reads (env NAIVE)")
	flag.IntVar(&c.posts, "posts", envInt("POSTS", 100_000), "blog posts (env POSTS)")
	flag.IntVar(&c.comments, "comments", envInt("COMMENTS_PER_POST", 100), "comments per post (env COMMENTS_PER_POST)")
	flag.IntVar(&c.wide, "wide", envInt("WIDE", 1_500_000), "orders of the wide benchmark, 4 lines each (env WIDE)")
	flag.IntVar(&c.reps, "reps", envInt("REPS", 3), "repetitions of each run (env REPS)")
	flag.StringVar(&c.bin, "bin", "bin/denorm", "denorm binary")
	flag.StringVar(&c.out, "out", "bench/results.json", "results file")
	flag.StringVar(&c.chart, "chart", "docs/images/bench.svg", "the chart of the results (an SVG file; empty: none)")
	flag.BoolVar(&c.chartOnly, "chart-only", false, "draw -chart from the -out results file and stop: no benchmark runs")
	flag.BoolVar(&c.skipF, "skip-f", os.Getenv("SKIP_F") != "", "skip F (the 4 x SCALE memory run)")
	flag.BoolVar(&c.skipBlog, "skip-blog", os.Getenv("SKIP_BLOG") != "", "skip the blog runs")
	flag.BoolVar(&c.skipWide, "skip-wide", os.Getenv("SKIP_WIDE") != "", "skip the wide runs")
	flag.BoolVar(&c.skipTarget, "skip-target", os.Getenv("SKIP_TARGET") != "", "skip D and E (FerretDB)")
	flag.BoolVar(&c.skipPerson, "skip-person", os.Getenv("SKIP_PERSON") != "", "skip A, B, floor, C, V, P and F (the person runs)")
	flag.BoolVar(&c.skipKeys, "skip-keys", os.Getenv("SKIP_KEYS") != "", "skip the uuid- and composite-keyed person runs (K)")
	syncFlags(&c.sync)
	ceilingFlags(&c.ceiling)
	typedFlags(&c.typed)
	if c.sync.only {
		c.out = "bench/results-sync.json"
	}
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("bench: ")
	if c.chartOnly {
		if err := chartOnly(c.out, c.chart); err != nil {
			log.Fatal(err)
		}
		log.Printf("wrote %s from %s", c.chart, c.out)
		return
	}
	if err := checkBinary(c.bin); err != nil {
		log.Fatal(err)
	}
	rep, err := run(context.Background(), c)
	if err != nil {
		log.Fatal(err)
	}
	var missed []string
	for _, ch := range rep.Checks {
		if !ch.Met {
			missed = append(missed, ch.Name)
		}
	}
	if len(missed) > 0 {
		log.Printf("%d target(s) NOT MET: %s", len(missed), strings.Join(missed, "; "))
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	var v int
	if s := os.Getenv(name); s != "" {
		if _, err := fmt.Sscan(s, &v); err == nil && v > 0 {
			return v
		}
	}
	return def
}

// Result is one measured run.
type Result struct {
	Docs    int64   `json:"docs"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// CPUSeconds is the user and system time of denorm's process (not
	// the source's), for runs of the denorm binary.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	// MachineCPUSeconds is the whole machine's busy CPU time over the
	// run (every process's: the source's too), where /proc/stat tells.
	MachineCPUSeconds float64 `json:"machineCpuSeconds,omitempty"`
	PeakKiB           int64   `json:"peakRssKiB,omitempty"`
	Note              string  `json:"note,omitempty"`
}

func (r Result) rate() float64 { return float64(r.Docs) / r.Seconds }

// Series is the repetitions of one run and their median.
type Series struct {
	Name    string   `json:"name"`
	What    string   `json:"what"`
	Runs    []Result `json:"runs"`
	Median  Result   `json:"median"`
	DocsPS  float64  `json:"docsPerSecond"`
	MBPS    float64  `json:"mbPerSecond"`
	PeakMiB float64  `json:"peakRssMiB,omitempty"`
}

func (s *Series) finish() {
	runs := slices.Clone(s.Runs)
	slices.SortFunc(runs, func(a, b Result) int {
		switch {
		case a.rate() < b.rate():
			return -1
		case a.rate() > b.rate():
			return 1
		}
		return 0
	})
	s.Median = runs[len(runs)/2]
	s.DocsPS = s.Median.rate()
	s.MBPS = float64(s.Median.Bytes) / 1e6 / s.Median.Seconds
	var peaks []int64
	for _, r := range s.Runs {
		if r.PeakKiB > 0 {
			peaks = append(peaks, r.PeakKiB)
		}
	}
	if len(peaks) > 0 {
		slices.Sort(peaks)
		s.PeakMiB = float64(peaks[len(peaks)/2]) / 1024
	}
}

// Check is one target of an issue, met or not.
type Check struct {
	// Goal is the issue and goal the target belongs to: "15.2" is issue
	// 15, goal 2.
	Goal   string  `json:"goal"`
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	Met    bool    `json:"met"`
}

// Report is bench/results.json.
type Report struct {
	When    time.Time          `json:"when"`
	Machine map[string]string  `json:"machine"`
	Config  map[string]int     `json:"config"`
	Series  map[string]*Series `json:"series"`
	Ratios  map[string]float64 `json:"ratios"`
	Checks  []Check            `json:"checks"`
	Sync    *SyncReport        `json:"sync,omitempty"`
	// Typed is the typed benchmark (typed.go).
	Typed *TypedReport `json:"typed,omitempty"`
}

// order is the order series are printed in.
var order = []string{"A", "B", "floor", "C", "V", "O", "P", "D", "E", "F1", "F4",
	"blogA", "blogB", "blogFloor", "blogQ", "wideA", "wideB", "wideFloor", "wideQ", "Kint", "Kuuid", "Kpair", "KintFloor", "KuuidFloor", "KpairFloor"}

func run(ctx context.Context, c config) (*Report, error) {
	admin := os.Getenv("DENORM_TEST_PG")
	mongo := os.Getenv("DENORM_TEST_MONGO")
	if admin == "" || mongo == "" {
		return nil, errors.New("DENORM_TEST_PG and DENORM_TEST_MONGO are not set: run through `make bench` (scripts/testenv.sh starts the servers)")
	}
	if _, err := os.Stat(c.bin); err != nil {
		return nil, fmt.Errorf("%s: %w (run make build)", c.bin, err)
	}
	tmp, err := os.MkdirTemp("", "denorm-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	rep := &Report{When: time.Now().UTC(), Machine: machine(ctx, admin), Series: map[string]*Series{}, Ratios: map[string]float64{},
		Config: map[string]int{"scale": c.scale, "targetScale": c.targetScale, "naive": c.naive, "posts": c.posts, "commentsPerPost": c.comments, "wideOrders": c.wide, "reps": c.reps}}
	series := func(name, what string) *Series {
		s := &Series{Name: name, What: what}
		rep.Series[name] = s
		return s
	}
	if c.sync.only {
		c.skipPerson, c.skipKeys, c.skipTarget, c.skipBlog, c.skipWide = true, true, true, true, true
		c.typed.skip = true
	}
	if c.typed.only {
		return typedOnly(ctx, c, tmp)
	}

	if !c.skipPerson {
		if err := personSet(ctx, c, tmp, series); err != nil {
			return nil, err
		}
	}

	if !c.skipKeys {
		log.Printf("key variants: %d persons keyed by a uuid, by two integers", c.scale)
		people, err := personDB(ctx, os.Getenv("DENORM_TEST_PG"), "bench_people", c.scale)
		if err != nil {
			return nil, err
		}
		if err := runKeyVariants(ctx, c, os.Getenv("DENORM_TEST_PG"), people, tmp, series); err != nil {
			return nil, err
		}
	}

	if !c.skipTarget {
		if err := targetSet(ctx, c, tmp, mongo, series); err != nil {
			return nil, err
		}
	}
	if !c.skipBlog {
		log.Printf("blog: %d posts, %d comments", c.posts, c.posts*c.comments)
		blog, err := blogDB(ctx, admin, "bench_blog", c.posts, c.comments)
		if err != nil {
			return nil, err
		}
		quarter, err := blogDB(ctx, admin, "bench_blog_quarter", max(c.posts/4, 1), c.comments)
		if err != nil {
			return nil, err
		}
		const blogMapping = "mappings/examples/blog.yaml"
		reads, err := fullReads(ctx, blog, blogMapping)
		if err != nil {
			return nil, err
		}
		err = benchSet(ctx, c, tmp, series, benchSpec{
			prefix: "blog", mapping: blogMapping, db: blog, quarter: quarter, reads: reads,
			files:   []string{"posts.jsonl", "comments.jsonl"},
			what:    fmt.Sprintf("blog example (posts with 3 recent comments, buckets of 100), %d posts, %d comments", c.posts, c.posts*c.comments),
			bWhat:   "PostgreSQL building the same posts and bucket pages (json_agg), COPY TO STDOUT into files",
			queries: blogQueries, all: true,
		})
		if err != nil {
			return nil, err
		}
	}

	if !c.skipWide {
		log.Printf("wide: %d orders, %d lines", c.wide, c.wide*wideLines)
		wide, err := wideDB(ctx, admin, "bench_wide", c.wide)
		if err != nil {
			return nil, err
		}
		quarter, err := wideDB(ctx, admin, "bench_wide_quarter", max(c.wide/4, 1))
		if err != nil {
			return nil, err
		}
		reads, err := fullReads(ctx, wide, wideMapping)
		if err != nil {
			return nil, err
		}
		err = benchSet(ctx, c, tmp, series, benchSpec{
			prefix: "wide", mapping: wideMapping, db: wide, quarter: quarter, reads: reads,
			files:   []string{"orders.jsonl"},
			what:    fmt.Sprintf("orders with %d wide lines each (16 columns: numeric, date, char(n), varchar), %d orders", wideLines, c.wide),
			bWhat:   "PostgreSQL json_agg (best of GROUP BY+JOIN and LATERAL), COPY TO STDOUT into a file",
			queries: wideQueries,
		})
		if err != nil {
			return nil, err
		}
	}

	if !c.typed.skip {
		log.Printf("typed: %d parents per type family, %d children each, and a third of that", c.typed.parents, typedChildren)
		t, err := runTyped(ctx, c, tmp)
		if err != nil {
			return nil, err
		}
		rep.Typed = t
	}

	if !c.sync.skip {
		s, err := runSync(ctx, c, admin, mongo)
		if err != nil {
			return nil, err
		}
		rep.Sync = s
	}

	for _, s := range rep.Series {
		s.finish()
	}
	rep.Machine["load at end"] = loadAvg()
	checks(rep)
	print(os.Stdout, rep)
	if err := os.MkdirAll(filepath.Dir(c.out), 0o755); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.out, append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	log.Printf("wrote %s", c.out)
	if c.chart != "" && !c.sync.only {
		if err := writeChart(rep, c.chart); err != nil {
			return nil, err
		}
		log.Printf("wrote %s", c.chart)
	}
	return rep, nil
}

const personMapping = "mappings/examples/person.yaml"

// personSet runs A, B, floor, C, V and P on SCALE persons, and F.
func personSet(ctx context.Context, c config, tmp string, series func(name, what string) *Series) error {
	admin := os.Getenv("DENORM_TEST_PG")
	log.Printf("generating %d persons", c.scale)
	people, err := personDB(ctx, admin, "bench_people", c.scale)
	if err != nil {
		return err
	}
	personReads, err := fullReads(ctx, people, personMapping)
	if err != nil {
		return err
	}
	a := series("A", fmt.Sprintf("denorm migrate, person example, %d persons, directory target", c.scale))
	b := series("B", "PostgreSQL json_agg (best of GROUP BY+JOIN and LATERAL), COPY TO STDOUT into a file")
	fl := series("floor", floorWhat)
	cc := series("C", fmt.Sprintf("naive loader: one query per person for its children, %d persons", c.naive))
	v := series("V", "denorm verify of A's directory (rebuilds every document and compares)")
	o := series("O", "denorm verify --oracle sql of A's directory (PostgreSQL builds every document from SQL compiled from the mapping)")
	p := series("P", "denorm plan of the same data (builds every document, writes a report)")
	var bPick string
	for i := 0; i < c.reps; i++ {
		log.Printf("round %d/%d: A, B, floor, C, V, O, P", i+1, c.reps)
		out := filepath.Join(tmp, "a")
		r, err := denormDir(c.bin, personMapping, people, out, "people.jsonl")
		if err != nil {
			return fmt.Errorf("A: %w", err)
		}
		a.Runs = append(a.Runs, r)
		docs := r.Docs
		r, err = sqlBest(ctx, people, personQueries, &bPick, filepath.Join(tmp, "b.json"))
		if err != nil {
			return fmt.Errorf("B: %w", err)
		}
		b.Runs = append(b.Runs, r)
		if i == 0 {
			if err := sameDocs(filepath.Join(out, "people.jsonl"), filepath.Join(tmp, "b.json"), 2000); err != nil {
				return fmt.Errorf("B does not build the documents A builds: %w", err)
			}
		}
		r, err = floorRun(ctx, people, personReads)
		if err != nil {
			return err
		}
		fl.Runs = append(fl.Runs, r)
		r, err = naive(ctx, people, c.naive, filepath.Join(tmp, "c.json"))
		if err != nil {
			return fmt.Errorf("C: %w", err)
		}
		cc.Runs = append(cc.Runs, r)
		r, err = denormVerify(c.bin, personMapping, people, out, docs)
		if err != nil {
			return fmt.Errorf("V: %w", err)
		}
		v.Runs = append(v.Runs, r)
		r, err = denormOracle(c.bin, personMapping, people, out, docs)
		if err != nil {
			return fmt.Errorf("O: %w", err)
		}
		o.Runs = append(o.Runs, r)
		r, err = denormPlan(c.bin, personMapping, people, filepath.Join(tmp, "plan.json"), docs)
		if err != nil {
			return fmt.Errorf("P: %w", err)
		}
		p.Runs = append(p.Runs, r)
	}

	if !c.skipF {
		log.Printf("F: %d persons", 4*c.scale)
		big, err := personDB(ctx, admin, "bench_people_4x", 4*c.scale)
		if err != nil {
			return err
		}
		f1 := series("F1", fmt.Sprintf("peak RSS of A at %d persons", c.scale))
		f4 := series("F4", fmt.Sprintf("peak RSS of A at %d persons", 4*c.scale))
		for i := 0; i < c.reps; i++ {
			log.Printf("round %d/%d: F", i+1, c.reps)
			r, err := denormDir(c.bin, personMapping, people, filepath.Join(tmp, "f1"), "people.jsonl")
			if err != nil {
				return fmt.Errorf("F: %w", err)
			}
			f1.Runs = append(f1.Runs, r)
			r, err = denormDir(c.bin, personMapping, big, filepath.Join(tmp, "f4"), "people.jsonl")
			if err != nil {
				return fmt.Errorf("F: %w", err)
			}
			f4.Runs = append(f4.Runs, r)
		}
		if !reuse {
			if err := dropDB(ctx, admin, "bench_people_4x"); err != nil {
				return err
			}
		}
	}
	return nil
}

// targetSet runs D and E (FerretDB).
func targetSet(ctx context.Context, c config, tmp, mongo string, series func(name, what string) *Series) error {
	admin := os.Getenv("DENORM_TEST_PG")
	log.Printf("D and E: %d persons into FerretDB", c.targetScale)
	small, err := personDB(ctx, admin, "bench_people_small", c.targetScale)
	if err != nil {
		return err
	}
	built := filepath.Join(tmp, "e")
	if _, err := denormDir(c.bin, personMapping, small, built, "people.jsonl"); err != nil {
		return fmt.Errorf("E, building the documents: %w", err)
	}
	docs, err := readDocs(filepath.Join(built, "people.jsonl"))
	if err != nil {
		return err
	}
	d := series("D", fmt.Sprintf("denorm migrate, person example, %d persons, into FerretDB", c.targetScale))
	e := series("E", fmt.Sprintf("the same %d documents, prebuilt, unordered insertMany into FerretDB", c.targetScale))
	for i := 0; i < c.reps; i++ {
		log.Printf("round %d/%d: D, E", i+1, c.reps)
		r, err := denormServer(ctx, c.bin, personMapping, small, mongo, fmt.Sprintf("bench_d_%d", i))
		if err != nil {
			return fmt.Errorf("D: %w", err)
		}
		d.Runs = append(d.Runs, r)
		r, err = insertMany(ctx, mongo, fmt.Sprintf("bench_e_%d", i), docs)
		if err != nil {
			return fmt.Errorf("E: %w", err)
		}
		e.Runs = append(e.Runs, r)
	}
	return nil
}

const floorWhat = "COPY (the rows A reads, in its order) TO STDOUT (FORMAT binary) into a discarding writer, a collection's relations concurrently (docs: rows sent)"

// benchSpec is a benchmark run as A, B and floor, plus A on a quarter of
// the data for the peak RSS.
type benchSpec struct {
	prefix, mapping string
	db, quarter     string
	reads           [][]string
	files           []string
	what, bWhat     string
	queries         map[string]string
	// all: every query of queries is one collection (summed), not
	// alternatives (the best taken).
	all bool
}

func benchSet(ctx context.Context, c config, tmp string, series func(name, what string) *Series, s benchSpec) error {
	a := series(s.prefix+"A", "denorm migrate, "+s.what+", directory target")
	b := series(s.prefix+"B", s.bWhat)
	fl := series(s.prefix+"Floor", floorWhat)
	q := series(s.prefix+"Q", "A on a quarter of the data (peak RSS)")
	out := filepath.Join(tmp, s.prefix)
	bFile := filepath.Join(tmp, s.prefix+"-b.json")
	var pick string
	runA := func() error {
		r, err := denormDir(c.bin, s.mapping, s.db, out, s.files...)
		if err != nil {
			return fmt.Errorf("%s A: %w", s.prefix, err)
		}
		a.Runs = append(a.Runs, r)
		return nil
	}
	runB := func() error {
		var r Result
		var err error
		if s.all {
			r, err = sqlAll(ctx, s.db, s.queries, bFile)
		} else {
			r, err = sqlBest(ctx, s.db, s.queries, &pick, bFile)
		}
		if err != nil {
			return fmt.Errorf("%s B: %w", s.prefix, err)
		}
		b.Runs = append(b.Runs, r)
		return nil
	}
	runFloor := func() error {
		r, err := floorRun(ctx, s.db, s.reads)
		if err != nil {
			return err
		}
		fl.Runs = append(fl.Runs, r)
		return nil
	}
	runQ := func() error {
		r, err := denormDir(c.bin, s.mapping, s.quarter, filepath.Join(tmp, s.prefix+"-q"), s.files...)
		if err != nil {
			return fmt.Errorf("%s quarter: %w", s.prefix, err)
		}
		q.Runs = append(q.Runs, r)
		return nil
	}
	// An untimed read of every relation first, so that the first timed
	// run does not pay for bringing the tables into memory for the others.
	log.Printf("%s: warming up (the floor's reads, untimed)", s.prefix)
	if _, err := floorRun(ctx, s.db, s.reads); err != nil {
		return err
	}
	// Each round starts one contender later than the round before, so
	// that no contender always runs after the same one.
	steps := []func() error{runA, runB, runFloor, runQ}
	for i := 0; i < c.reps; i++ {
		log.Printf("round %d/%d: %s A, B, floor, quarter (from the %d.)", i+1, c.reps, s.prefix, i%len(steps)+1)
		for j := range steps {
			if err := steps[(i+j)%len(steps)](); err != nil {
				return err
			}
		}
		if i == 0 && !s.all {
			if err := sameDocs(filepath.Join(out, s.files[0]), bFile, 2000); err != nil {
				return fmt.Errorf("%s B does not build the documents A builds: %w", s.prefix, err)
			}
		}
	}
	return nil
}

// paired is the median over the rounds of x's time over y's in the same
// round; ok is false unless both ran once a round.
func paired(x, y *Series) (float64, bool) {
	if len(x.Runs) != len(y.Runs) || len(x.Runs) == 0 {
		return 0, false
	}
	r := make([]float64, len(x.Runs))
	for i := range r {
		r[i] = x.Runs[i].Seconds / y.Runs[i].Seconds
	}
	slices.Sort(r)
	return r[len(r)/2], true
}

// checks evaluates the targets of the issues on the medians.
func checks(rep *Report) {
	check := func(goal, name string, v float64, target string, met bool) {
		rep.Checks = append(rep.Checks, Check{Goal: goal, Name: name, Value: v, Target: target, Met: met})
	}
	// rate is x's docs/s over y's; slower is x's time over y's.
	rate := func(name string, x, y *Series) float64 {
		v := x.DocsPS / y.DocsPS
		rep.Ratios[name] = v
		return v
	}
	slower := func(name string, x, y *Series) float64 {
		v := x.Median.Seconds / y.Median.Seconds
		rep.Ratios[name] = v
		return v
	}
	s := rep.Series
	var peak float64
	for _, x := range s {
		peak = max(peak, x.PeakMiB)
	}
	for _, p := range []struct{ prefix, label string }{{"", "person"}, {"blog", "blog"}, {"wide", "wide"}} {
		a, ok := s[p.prefix+"A"]
		if !ok {
			continue
		}
		v := rate(p.prefix+"A/"+p.prefix+"B", a, s[p.prefix+"B"])
		check("15.2", p.label+": A/B docs/s (PostgreSQL-native JSON)", v, ">= 3.0", v >= 3.0)
		fl := s[p.prefix+"Floor"]
		if p.prefix == "" {
			fl = s["floor"]
		}
		v = slower(p.prefix+"A time/floor time", a, fl)
		check("15.1-2", p.label+": A time / floor time", v, "<= 1.5", v <= 1.5)
		if r, ok := paired(a, fl); ok {
			// Not a check: beside the ratio of the medians, the median of
			// each round's ratio, which the machine's changing speed moves
			// less (both runs of a round see much the same machine).
			rep.Ratios[p.prefix+"A time/floor time, median of the rounds"] = r
		}
		if q, ok := s[p.prefix+"Q"]; ok {
			v = a.PeakMiB / q.PeakMiB
			rep.Ratios[p.prefix+"A/"+p.prefix+"Q peak RSS"] = v
			check("15.6", p.label+": peak RSS 4x data / 1x", v, "<= 1.2", v <= 1.2)
		}
	}
	keyChecks(rep, func(name string, v float64, target string, met bool) { check("15.3", name, v, target, met) })
	if v, ok := s["V"]; ok {
		x := rate("V/A", v, s["A"])
		check("15.4", "verify docs/s / migrate docs/s", x, ">= 0.5", x >= 0.5)
	}
	if o, ok := s["O"]; ok {
		x := rate("O/A", o, s["A"])
		check("25.1", "verify --oracle sql docs/s / migrate docs/s", x, ">= 0.25", x >= 0.25)
	}
	if p, ok := s["P"]; ok {
		x := rate("P/A", p, s["A"])
		check("15.5", "plan docs/s / migrate docs/s", x, ">= 1.0", x >= 1.0)
	}
	if d, ok := s["D"]; ok {
		v := rate("D/E", d, s["E"])
		check("7", "D/E docs/s, FerretDB", v, ">= 0.9", v >= 0.9)
	}
	if cc, ok := s["C"]; ok {
		v := rate("A/C", s["A"], cc)
		check("7", "A/C docs/s (C is slower by this factor)", v, ">= 20", v >= 20)
	}
	if f1, ok := s["F1"]; ok {
		f4 := s["F4"]
		v := f4.PeakMiB / f1.PeakMiB
		rep.Ratios["F4/F1 peak RSS"] = v
		check("7, 15.6", "person: peak RSS 4x data / 1x", v, "<= 1.2", v <= 1.2)
	}
	if peak > 0 {
		mb := peak * (1 << 20) / 1e6
		check("7, 15.6", "highest peak RSS of any denorm run, MB", mb, "< 300", mb < 300)
	}
	if rep.Sync != nil {
		syncChecks(rep.Sync, check)
	}
	if rep.Typed != nil {
		rep.Checks = append(rep.Checks, typedChecks(rep.Typed)...)
	}
}

func print(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tdocs\tmedian s\tits CPU s\tdocs/s\tMB/s\tpeak RSS MiB\t")
	for _, name := range order {
		s, ok := rep.Series[name]
		if !ok {
			continue
		}
		peak := ""
		if s.PeakMiB > 0 {
			peak = fmt.Sprintf("%.1f", s.PeakMiB)
		}
		cpu := ""
		if s.Median.CPUSeconds > 0 {
			cpu = fmt.Sprintf("%.2f", s.Median.CPUSeconds)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%s\t%.0f\t%.1f\t%s\t\n", name, s.Median.Docs, s.Median.Seconds, cpu, s.DocsPS, s.MBPS, peak)
	}
	tw.Flush()
	fmt.Fprintln(w)
	printSync(w, rep.Sync)
	printTyped(w, rep.Typed)
	for _, name := range order {
		if s, ok := rep.Series[name]; ok {
			fmt.Fprintf(w, "  %-9s %s\n", name, s.What)
		}
	}
	fmt.Fprintln(w)
	printChecks(w, rep.Checks)
	fmt.Fprintf(w, "\nmachine: %s\n", strings.Join(machineLine(rep.Machine), ", "))
}

func printChecks(w io.Writer, checks []Check) {
	for _, c := range checks {
		mark := "met"
		if !c.Met {
			mark = "NOT MET"
		}
		fmt.Fprintf(w, "goal %-8s %-46s %8.2f  target %-7s %s\n", c.Goal, c.Name, c.Value, c.Target, mark)
	}
}

func machineLine(m map[string]string) []string {
	var out []string
	for _, k := range []string{"cpu", "cores", "memory", "os", "go", "postgres", "load at start", "load at end"} {
		if v := m[k]; v != "" {
			out = append(out, k+" "+v)
		}
	}
	return out
}

// loadAvg is the 1, 5 and 15 minute load averages: the machine may be
// shared, and the figures say under which load they were measured.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func machine(ctx context.Context, admin string) map[string]string {
	m := map[string]string{"cores": fmt.Sprint(runtime.NumCPU()), "go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH,
		"load at start": loadAvg()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				var kb int64
				fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
				m["memory"] = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	if data, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m["os"] = strings.Trim(v, `"`) + " " + runtime.GOARCH
			}
		}
	}
	if conn, err := pgx.Connect(ctx, admin); err == nil {
		var v string
		if conn.QueryRow(ctx, "SHOW server_version").Scan(&v) == nil {
			m["postgres"] = v
		}
		conn.Close(ctx)
	}
	return m
}

// settle writes the page cache's dirty pages out before a timed run: the
// gigabytes earlier runs wrote would otherwise be written back during it
// (one series varied by up to 2x from that alone, on a virtual disk).
// What the run writes itself stays its own cost.
func settle() { syscall.Sync() }

// measured is one timed run of a command.
type measured struct {
	wall    time.Duration
	peakKiB int64
	// cpu is the command's user and system time: with wall, it tells a
	// run that worked longer from one that waited longer.
	cpu time.Duration
	// machineCPU is the machine's busy time over the run (machineBusy).
	machineCPU time.Duration
	out        string
}

// result is m as a Result of docs documents and size bytes.
func (m measured) result(docs, size int64) Result {
	return Result{Docs: docs, Bytes: size, Seconds: m.wall.Seconds(), CPUSeconds: m.cpu.Seconds(), MachineCPUSeconds: m.machineCPU.Seconds(), PeakKiB: m.peakKiB}
}

// timeCmd runs a command, measuring wall time, CPU time and peak RSS, and
// keeping its output.
func timeCmd(name string, args ...string) (measured, error) {
	cmd := exec.Command(name, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	settle()
	busy := startBusy()
	start := time.Now()
	peak, err := procmem.Run(cmd, 10*time.Millisecond)
	m := measured{wall: time.Since(start), machineCPU: busy.stop(), peakKiB: peak, out: out.String()}
	if st := cmd.ProcessState; st != nil {
		m.cpu = st.UserTime() + st.SystemTime()
	}
	if err != nil {
		return m, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, m.out)
	}
	return m, nil
}
