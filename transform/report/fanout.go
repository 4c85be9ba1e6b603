package report

import (
	"fmt"
	"strings"

	"github.com/denorm/denorm/mappings"
)

// Fan-out in plan's report: for every table the mapping reads, how many
// documents one change of a row makes sync rewrite (mappings.TableFanout,
// predicted by extract.PredictFanout in the plan's snapshot, on every
// row whatever --sample says), per place it is read.

// FanoutWarnings are the high-fanout findings: one warning per table one
// change of whose rows can rewrite more than limit documents (limit 0:
// none), naming the place - the mapping choice - that causes most of it.
func FanoutWarnings(fan []mappings.TableFanout, limit int64) []Warning {
	var out []Warning
	for _, t := range fan {
		if !t.Over(limit) {
			continue
		}
		w := Warning{Severity: "warning", Rule: "high-fanout", Message: fmt.Sprintf("%s: over --max-fanout %d", t.Summary(), limit)}
		if p := t.Worst(); p != nil {
			w.Collection, w.Path = p.Collection, p.Node
			w.Suggestion = fanoutSuggestion(p.How)
		}
		out = append(out, w)
	}
	return out
}

// fanoutSuggestion says what to do about a place whose rows each reach
// many documents.
func fanoutSuggestion(how string) string {
	switch how {
	case "copied into", "copied by lookup into", "embedded in":
		return "every change of one of these rows rewrites every document holding its copy: keep a reference (ref:) to the row's own collection instead of the copy, copy only columns that rarely change, or accept the rewrites (sync --max-keys bounds one batch's by-key rebuild)"
	case "aggregated into", "listed as ids in", "join table of":
		return "each row counts in many documents: move the array or aggregate to the side with fewer rows per key, or accept the rewrites"
	}
	return "one change rewrites that many documents: check that the table changes rarely"
}

// fanoutLines renders the fan-out as text lines: a line per table, then its
// places indented.
func fanoutLines(fan []mappings.TableFanout, limit int64, indent string) []string {
	var out []string
	for _, t := range fan {
		flag := ""
		if t.Over(limit) {
			flag = fmt.Sprintf("  [over --max-fanout %d]", limit)
		}
		out = append(out, fmt.Sprintf("%s%s (%d rows): p50 %d, p99 %d, max %d, mean %.1f%s", indent, t.Table, t.Rows, t.P50, t.P99, t.Max, t.Mean, flag))
		for _, p := range t.Places {
			out = append(out, fmt.Sprintf("%s  %s: p50 %d, p99 %d, max %d", indent, p.Cause(t.Table), p.P50, p.P99, p.Max))
		}
	}
	return out
}

// FanoutText is the fan-out as text, a table a line and its places below
// it, each line starting with indent.
func FanoutText(fan []mappings.TableFanout, limit int64, indent string) string {
	lines := fanoutLines(fan, limit, indent)
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// fanoutMarkdown writes the fan-out as a Markdown section with a table.
func fanoutMarkdown(b *strings.Builder, fan []mappings.TableFanout, limit int64) {
	fmt.Fprintf(b, "\n## Fan-out\n\nDocuments one change of a row makes sync rewrite, per table read (over its rows), and per place it is read; over %s is flagged.\n\n| table | rows | p50 | p99 | max | mean | places (p50 / p99 / max) |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |\n", limitText(limit))
	for _, t := range fan {
		var places []string
		for _, p := range t.Places {
			places = append(places, mdEsc(fmt.Sprintf("%s: %d / %d / %d", p.Cause(t.Table), p.P50, p.P99, p.Max)))
		}
		max := fmt.Sprint(t.Max)
		if t.Over(limit) {
			max = "**" + max + "**"
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s | %.1f | %s |\n", mdEsc(t.Table), t.Rows, t.P50, t.P99, max, t.Mean, strings.Join(places, "<br>"))
	}
}

func limitText(limit int64) string {
	if limit <= 0 {
		return "no limit (--max-fanout 0)"
	}
	return fmt.Sprintf("--max-fanout %d", limit)
}
