package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/denorm/denorm/internal/connstr"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/pipeline"
	"github.com/denorm/denorm/transform/report"
)

// runSummary is what migrate did: the table it prints on stdout and the
// JSON it writes with --summary-file.
type runSummary struct {
	Target    string
	Job       string
	Resumed   bool
	Started   time.Time
	Elapsed   time.Duration
	Stats     []pipeline.Stats
	Dropped   []string
	ShardKeys []pipeline.ShardResult
	Indexes   []pipeline.IndexesCreated
	// RowSecurity are the tables row-level security filtered.
	RowSecurity []*mappings.Table
	// Failed: the run stopped on an error, not an interrupt; its
	// unfinished collections are marked "(stopped)", not "(interrupted)".
	Failed bool
	// StoppedBy says why a run that was not interrupted stopped early
	// (--max-rejects); its unfinished collections are "(stopped)".
	StoppedBy string
}

func newRunSummary(o *migrateOptions) *runSummary {
	return &runSummary{Target: connstr.Parse(o.target).Redacted(), Started: time.Now().UTC()}
}

// printSummary writes the table of this run's work per collection, in at
// most 80 columns for names of usual length; after a resume, the job's
// totals with the earlier runs' work follow.
func printSummary(g *globals, s *runSummary) {
	w := g.stdout
	t := &table{right: []bool{false, false, true, true, true, true, true}}
	t.add("COLLECTION", "TABLE", "ROWS", "DOCS", "FAILED", "TIME", "DOCS/S")
	var rows, docs, failed int64
	var prior, buckets bool
	for _, st := range s.Stats {
		note := ""
		switch {
		case st.Done && st.Elapsed == 0 && st.PriorRows > 0:
			note = "(done before)"
		case !st.Done && (s.Failed || s.StoppedBy != ""):
			note = "(stopped)"
		case !st.Done:
			note = "(interrupted)"
		}
		t.add(st.Collection, st.Table, fmt.Sprint(st.RunRows()), fmt.Sprint(st.RunWritten()), fmt.Sprint(st.RunFailed()),
			st.Elapsed.Round(time.Millisecond).String(), rateText(summaryRate(st.RunWritten(), st.Elapsed)), note)
		rows, docs, failed = rows+st.RunRows(), docs+st.RunWritten(), failed+st.RunFailed()
		prior = prior || st.PriorRows > 0 || st.PriorWritten > 0
		buckets = buckets || st.Bucket
	}
	t.add("TOTAL", "", fmt.Sprint(rows), fmt.Sprint(docs), fmt.Sprint(failed), s.Elapsed.Round(time.Millisecond).String(), rateText(summaryRate(docs, s.Elapsed)))
	t.write(w)
	if s.StoppedBy != "" {
		wrap(w, s.StoppedBy)
	}
	if buckets {
		var parts []string
		for _, st := range s.Stats {
			if st.Bucket {
				parts = append(parts, fmt.Sprintf("%s: %s of %s", st.Collection, report.Plural(st.RunWritten(), "page", "pages"), report.Plural(st.RunRows(), "row", "rows")))
			}
		}
		wrap(w, fmt.Sprintf("bucket collections count pages as documents (%s)", strings.Join(parts, "; ")))
	}
	if prior {
		var jr, jd, jf int64
		for _, st := range s.Stats {
			jr, jd, jf = jr+st.Rows, jd+st.Written, jf+st.Failed
		}
		wrap(w, fmt.Sprintf("job %s in all, with the runs before this one: %s read, %s written, %d failed", s.Job, report.Plural(jr, "row", "rows"), report.Plural(jd, "document", "documents"), jf))
	}
	for _, ic := range s.Indexes {
		missing := ""
		if len(ic.Missing) > 0 {
			missing = "; not built: " + strings.Join(ic.Missing, ", ")
		}
		wrap(w, fmt.Sprintf("indexes of %s: %s (%s)%s", ic.Collection, strings.Join(ic.Indexes, ", "), ic.Elapsed.Round(time.Millisecond), missing))
	}
	fmt.Fprintf(w, "target: %s\n", s.Target)
}

// wrap writes text in lines of at most 80 columns (a longer word stays
// whole), the lines after the first indented by two blanks.
func wrap(w io.Writer, text string) {
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && len(line)+1+len(word) > 80 {
			fmt.Fprintln(w, line)
			line = " "
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}

// summaryRate is documents per second for a summary: over less than
// 100 ms there is no rate worth showing.
func summaryRate(n int64, elapsed time.Duration) float64 {
	if elapsed < 100*time.Millisecond {
		return -1
	}
	return float64(n) / elapsed.Seconds()
}

// table is a text table: columns padded to their widest cell, two blanks
// apart, right-aligned where right says so; a cell past the columns (a
// note) follows the row as it is.
type table struct {
	right []bool
	rows  [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	width := make([]int, len(t.right))
	for _, r := range t.rows {
		for i := range t.right {
			if i < len(r) {
				width[i] = max(width[i], utf8.RuneCountInString(r[i]))
			}
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			if i >= len(t.right) {
				b.WriteString("  " + c)
				continue
			}
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if t.right[i] {
				b.WriteString(pad + c)
			} else if i == len(t.right)-1 && len(r) == len(t.right) {
				b.WriteString(c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// Summary file statuses.
const (
	statusOK          = "ok"
	statusRejected    = "rejected"
	statusInterrupted = "interrupted"
	statusFailed      = "failed"
	// statusStopped: --max-rejects stopped the run (exit 5).
	statusStopped = "stopped"
)

// counts are rows read, documents written and rows or documents failed.
type counts struct {
	Rows      int64 `json:"rows"`
	Documents int64 `json:"documents"`
	Failed    int64 `json:"failed"`
}

type summaryCollection struct {
	Collection string `json:"collection"`
	Table      string `json:"table"`
	// Kind is "documents" or "buckets" (documents are then pages).
	Kind           string  `json:"kind"`
	Done           bool    `json:"done"`
	Run            counts  `json:"run"`
	Job            counts  `json:"job"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	DocsPerSecond  float64 `json:"docsPerSecond"`
}

type summaryIndexes struct {
	Collection string   `json:"collection"`
	Indexes    []string `json:"indexes"`
	// Missing are those of Indexes the target does not hold as declared.
	Missing        []string `json:"missing"`
	ElapsedSeconds float64  `json:"elapsedSeconds"`
}

type summaryShard struct {
	Collection string `json:"collection"`
	Key        string `json:"key"`
	Applied    bool   `json:"applied"`
	How        string `json:"how,omitempty"`
	Note       string `json:"note,omitempty"`
}

// summaryFile is the JSON of --summary-file (docs/migrate.md, "Summary file").
type summaryFile struct {
	Command        string              `json:"command"`
	Status         string              `json:"status"`
	ExitCode       int                 `json:"exitCode"`
	Error          string              `json:"error,omitempty"`
	Target         string              `json:"target"`
	Job            string              `json:"job,omitempty"`
	Resumed        bool                `json:"resumed"`
	Started        time.Time           `json:"started"`
	Finished       time.Time           `json:"finished"`
	ElapsedSeconds float64             `json:"elapsedSeconds"`
	Collections    []summaryCollection `json:"collections"`
	Run            counts              `json:"run"`
	JobTotal       counts              `json:"jobTotal"`
	Dropped        []string            `json:"dropped"`
	ShardKeys      []summaryShard      `json:"shardKeys"`
	Indexes        []summaryIndexes    `json:"indexes"`
	// RowSecurity lists the tables row-level security filtered (the run
	// had --row-security); absent when none.
	RowSecurity []rowSecurityReport `json:"rowSecurity,omitempty"`
}

// write writes the summary of a run that ended with runErr to path.
func (s *runSummary) write(path string, runErr error) error {
	runErr = explainRowSecurity(runErr)
	f := summaryFile{Command: "migrate", Status: statusOK, ExitCode: exitCode(runErr), RowSecurity: rowSecurityReports(s.RowSecurity), Target: s.Target, Job: s.Job, Resumed: s.Resumed,
		Started: s.Started, Finished: time.Now().UTC(), Collections: []summaryCollection{}, Dropped: s.Dropped,
		ShardKeys: []summaryShard{}, Indexes: []summaryIndexes{}}
	f.ElapsedSeconds = f.Finished.Sub(f.Started).Seconds()
	var (
		re rejectedError
		me maxRejectsError
		ie *pipeline.InterruptedError
	)
	switch {
	case runErr == nil:
	case errors.As(runErr, &me):
		f.Status = statusStopped
	case errors.As(runErr, &re):
		f.Status = statusRejected
	case errors.As(runErr, &ie) || strings.HasPrefix(runErr.Error(), "interrupted"):
		f.Status = statusInterrupted
	default:
		f.Status = statusFailed
	}
	if runErr != nil {
		f.Error = runErr.Error()
	}
	if f.Dropped == nil {
		f.Dropped = []string{}
	}
	for _, st := range s.Stats {
		kind := "documents"
		if st.Bucket {
			kind = "buckets"
		}
		c := summaryCollection{Collection: st.Collection, Table: st.Table, Kind: kind, Done: st.Done,
			Run: counts{st.RunRows(), st.RunWritten(), st.RunFailed()}, Job: counts{st.Rows, st.Written, st.Failed},
			ElapsedSeconds: st.Elapsed.Seconds(), DocsPerSecond: max(summaryRate(st.RunWritten(), st.Elapsed), 0)}
		f.Collections = append(f.Collections, c)
		f.Run.Rows, f.Run.Documents, f.Run.Failed = f.Run.Rows+c.Run.Rows, f.Run.Documents+c.Run.Documents, f.Run.Failed+c.Run.Failed
		f.JobTotal.Rows, f.JobTotal.Documents, f.JobTotal.Failed = f.JobTotal.Rows+c.Job.Rows, f.JobTotal.Documents+c.Job.Documents, f.JobTotal.Failed+c.Job.Failed
	}
	for _, sk := range s.ShardKeys {
		f.ShardKeys = append(f.ShardKeys, summaryShard{Collection: sk.Collection, Key: sk.Key, Applied: sk.Applied, How: sk.How, Note: sk.Note})
	}
	for _, ic := range s.Indexes {
		missing := ic.Missing
		if missing == nil {
			missing = []string{}
		}
		f.Indexes = append(f.Indexes, summaryIndexes{Collection: ic.Collection, Indexes: ic.Indexes, Missing: missing, ElapsedSeconds: ic.Elapsed.Seconds()})
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("summary file: %w", err)
	}
	return nil
}
