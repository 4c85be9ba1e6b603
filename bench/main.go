// Command bench is denorm's side-by-side benchmark (make bench). It runs
// against the throwaway PostgreSQL and FerretDB that scripts/testenv.sh
// starts (DENORM_TEST_PG, DENORM_TEST_MONGO), generates the person and blog
// examples' tables at scale inside PostgreSQL, and runs, interleaved and
// repeated, what a user could run instead of denorm:
//
//	A  denorm migrate of the person example into a directory target
//	B  PostgreSQL building the same documents (json_agg with GROUP BY + JOIN,
//	   and with LATERAL; the better of the two), COPY ... TO STDOUT into a file
//	C  a naive loader: one query per person for its children (a subset)
//	D  denorm migrate into FerretDB
//	E  the same documents, already built, inserted into FerretDB with plain
//	   unordered insertMany batches: the target's own ceiling
//	F  peak RSS of A at SCALE and 4 x SCALE persons
//	blog: A-style and B-style runs of the blog example (buckets of 100)
//	K  A on the person data keyed by an integer, a uuid and two integers,
//	   interleaved (keys.go)
//
// Every figure compared is a ratio of runs made side by side; medians of
// REPS repetitions are reported. Results go to stdout as a table and to
// bench/results.json.
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
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/denorm/denorm/internal/procmem"
)

type config struct {
	scale       int // persons for A, B, C and F
	targetScale int // persons for D and E
	naive       int // persons C reads
	posts       int // blog posts
	comments    int // comments per post
	reps        int
	bin         string
	out         string
	skipF       bool
	skipBlog    bool
	skipKeys    bool
}

func main() {
	var c config
	flag.IntVar(&c.scale, "scale", envInt("SCALE", 1_000_000), "persons (env SCALE)")
	flag.IntVar(&c.targetScale, "target-scale", envInt("TARGET_SCALE", 100_000), "persons written to FerretDB in D and E (env TARGET_SCALE)")
	flag.IntVar(&c.naive, "naive", envInt("NAIVE", 20_000), "persons the naive loader C reads (env NAIVE)")
	flag.IntVar(&c.posts, "posts", envInt("POSTS", 100_000), "blog posts (env POSTS)")
	flag.IntVar(&c.comments, "comments", envInt("COMMENTS_PER_POST", 100), "comments per post (env COMMENTS_PER_POST)")
	flag.IntVar(&c.reps, "reps", envInt("REPS", 3), "repetitions of each run (env REPS)")
	flag.StringVar(&c.bin, "bin", "bin/denorm", "denorm binary")
	flag.StringVar(&c.out, "out", "bench/results.json", "results file")
	flag.BoolVar(&c.skipF, "skip-f", os.Getenv("SKIP_F") != "", "skip F (the 4 x SCALE memory run)")
	flag.BoolVar(&c.skipBlog, "skip-blog", os.Getenv("SKIP_BLOG") != "", "skip the blog runs")
	flag.BoolVar(&c.skipKeys, "skip-keys", os.Getenv("SKIP_KEYS") != "", "skip the uuid- and composite-keyed person runs")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("bench: ")
	if err := run(context.Background(), c); err != nil {
		log.Fatal(err)
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
	PeakKiB int64   `json:"peakRssKiB,omitempty"`
	Note    string  `json:"note,omitempty"`
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

// Check is one target of the issue, met or not.
type Check struct {
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
}

func run(ctx context.Context, c config) error {
	admin := os.Getenv("DENORM_TEST_PG")
	mongo := os.Getenv("DENORM_TEST_MONGO")
	if admin == "" || mongo == "" {
		return errors.New("DENORM_TEST_PG and DENORM_TEST_MONGO are not set: run through `make bench` (scripts/testenv.sh starts the servers)")
	}
	if _, err := os.Stat(c.bin); err != nil {
		return fmt.Errorf("%s: %w (run make build)", c.bin, err)
	}
	tmp, err := os.MkdirTemp("", "denorm-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	rep := &Report{When: time.Now().UTC(), Machine: machine(ctx, admin), Series: map[string]*Series{}, Ratios: map[string]float64{},
		Config: map[string]int{"scale": c.scale, "targetScale": c.targetScale, "naive": c.naive, "posts": c.posts, "commentsPerPost": c.comments, "reps": c.reps}}
	series := func(name, what string) *Series {
		s := &Series{Name: name, What: what}
		rep.Series[name] = s
		return s
	}

	log.Printf("generating %d persons", c.scale)
	people, err := personDB(ctx, admin, "bench_people", c.scale)
	if err != nil {
		return err
	}
	a := series("A", fmt.Sprintf("denorm migrate, person example, %d persons, directory target", c.scale))
	b := series("B", "PostgreSQL json_agg (best of GROUP BY+JOIN and LATERAL), COPY TO STDOUT into a file")
	cc := series("C", fmt.Sprintf("naive loader: one query per person for its children, %d persons", c.naive))
	personMapping := "mappings/examples/person.yaml"
	for i := 0; i < c.reps; i++ {
		log.Printf("round %d/%d: A, B, C", i+1, c.reps)
		r, err := denormDir(c.bin, personMapping, people, filepath.Join(tmp, "a"), "people.jsonl")
		if err != nil {
			return fmt.Errorf("A: %w", err)
		}
		a.Runs = append(a.Runs, r)
		r, err = sqlBest(ctx, people, personQueries, filepath.Join(tmp, "b.json"))
		if err != nil {
			return fmt.Errorf("B: %w", err)
		}
		b.Runs = append(b.Runs, r)
		if i == 0 {
			if err := sameDocs(filepath.Join(tmp, "a", "people.jsonl"), filepath.Join(tmp, "b.json"), 2000); err != nil {
				return fmt.Errorf("B does not build the documents A builds: %w", err)
			}
		}
		r, err = naive(ctx, people, c.naive, filepath.Join(tmp, "c.json"))
		if err != nil {
			return fmt.Errorf("C: %w", err)
		}
		cc.Runs = append(cc.Runs, r)
	}

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
	docs = nil

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
		if err := dropDB(ctx, admin, "bench_people_4x"); err != nil {
			return err
		}
	}

	if !c.skipBlog {
		log.Printf("blog: %d posts, %d comments", c.posts, c.posts*c.comments)
		blog, err := blogDB(ctx, admin, "bench_blog", c.posts, c.comments)
		if err != nil {
			return err
		}
		ba := series("blogA", fmt.Sprintf("denorm migrate, blog example (posts with 3 recent comments, buckets of 100), %d posts, %d comments", c.posts, c.posts*c.comments))
		bb := series("blogB", "PostgreSQL building the same posts and bucket pages (json_agg), COPY TO STDOUT into files")
		for i := 0; i < c.reps; i++ {
			log.Printf("round %d/%d: blog A, B", i+1, c.reps)
			r, err := denormDir(c.bin, "mappings/examples/blog.yaml", blog, filepath.Join(tmp, "blog"), "posts.jsonl", "comments.jsonl")
			if err != nil {
				return fmt.Errorf("blog A: %w", err)
			}
			ba.Runs = append(ba.Runs, r)
			r, err = sqlAll(ctx, blog, blogQueries, filepath.Join(tmp, "blog.json"))
			if err != nil {
				return fmt.Errorf("blog B: %w", err)
			}
			bb.Runs = append(bb.Runs, r)
		}
	}

	if !c.skipKeys {
		log.Printf("key variants: %d persons keyed by a uuid, by two integers", c.scale)
		if err := runKeyVariants(ctx, c, admin, people, tmp, series); err != nil {
			return err
		}
	}
	for _, s := range rep.Series {
		s.finish()
	}
	ratio := func(name string, x, y *Series) float64 {
		v := x.DocsPS / y.DocsPS
		rep.Ratios[name] = v
		return v
	}
	check := func(name string, v float64, target string, met bool) {
		rep.Checks = append(rep.Checks, Check{Name: name, Value: v, Target: target, Met: met})
	}
	v := ratio("A/B", a, b)
	check("A/B docs/s, person", v, ">= 2.0", v >= 2.0)
	v = ratio("D/E", d, e)
	check("D/E docs/s, FerretDB", v, ">= 0.9", v >= 0.9)
	v = ratio("A/C", a, cc)
	check("A/C docs/s (C is slower by this factor)", v, ">= 20", v >= 20)
	if f1, ok := rep.Series["F1"]; ok {
		f4 := rep.Series["F4"]
		v = f4.PeakMiB / f1.PeakMiB
		rep.Ratios["F4/F1 peak RSS"] = v
		check("F: peak RSS 4x/1x", v, "<= 1.2", v <= 1.2)
		check("F: peak RSS at 4x, MiB", f4.PeakMiB, "< 300", f4.PeakMiB < 300)
	}
	keyChecks(rep, check)
	if ba, ok := rep.Series["blogA"]; ok {
		v = ratio("blogA/blogB", ba, rep.Series["blogB"])
		check("blog A/B docs/s", v, "> 1.0", v > 1.0)
	}
	print(os.Stdout, rep)
	if err := os.MkdirAll(filepath.Dir(c.out), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.out, append(data, '\n'), 0o644); err != nil {
		return err
	}
	log.Printf("wrote %s", c.out)
	return nil
}

func print(w io.Writer, rep *Report) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tdocs\tmedian s\tdocs/s\tMB/s\tpeak RSS MiB\t")
	for _, name := range []string{"A", "B", "C", "D", "E", "F1", "F4", "blogA", "blogB", "Kint", "Kuuid", "Kpair"} {
		s, ok := rep.Series[name]
		if !ok {
			continue
		}
		peak := ""
		if s.PeakMiB > 0 {
			peak = fmt.Sprintf("%.1f", s.PeakMiB)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.0f\t%.1f\t%s\t\n", name, s.Median.Docs, s.Median.Seconds, s.DocsPS, s.MBPS, peak)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, name := range []string{"A", "B", "C", "D", "E", "F1", "F4", "blogA", "blogB", "Kint", "Kuuid", "Kpair"} {
		if s, ok := rep.Series[name]; ok {
			fmt.Fprintf(w, "  %-6s %s\n", name, s.What)
		}
	}
	fmt.Fprintln(w)
	for _, c := range rep.Checks {
		mark := "MET"
		if !c.Met {
			mark = "NOT MET"
		}
		fmt.Fprintf(w, "%-44s %8.2f  target %-7s %s\n", c.Name, c.Value, c.Target, mark)
	}
	fmt.Fprintf(w, "\nmachine: %s\n", strings.Join(machineLine(rep.Machine), ", "))
}

func machineLine(m map[string]string) []string {
	var out []string
	for _, k := range []string{"cpu", "cores", "memory", "os", "go", "postgres"} {
		if v := m[k]; v != "" {
			out = append(out, k+" "+v)
		}
	}
	return out
}

func machine(ctx context.Context, admin string) map[string]string {
	m := map[string]string{"cores": fmt.Sprint(runtime.NumCPU()), "go": runtime.Version(), "os": runtime.GOOS + "/" + runtime.GOARCH}
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

// timeCmd runs a command, measuring wall time and peak RSS.
func timeCmd(name string, args ...string) (time.Duration, int64, error) {
	cmd := exec.Command(name, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	peak, err := procmem.Run(cmd, 10*time.Millisecond)
	el := time.Since(start)
	if err != nil {
		return el, peak, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return el, peak, nil
}
