package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Formats lists the output formats Write accepts.
var Formats = []string{"text", "json", "markdown", "html"}

// Write renders r in format (text, json, markdown or html).
func Write(w io.Writer, r *Report, format string) error {
	switch format {
	case "text":
		return writeText(w, r)
	case "json":
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(r)
	case "markdown":
		return writeMarkdown(w, r)
	case "html":
		return writeHTML(w, r)
	}
	return fmt.Errorf("unknown report format %q: use one of %s", format, strings.Join(Formats, ", "))
}

func estimateNote(r *Report) string {
	if r.Estimated {
		return fmt.Sprintf("figures are estimates from a %.3g%% sample of the root rows", r.SamplePercent)
	}
	return "figures are exact: every row read"
}

// Plural is "1 document" or "3 documents".
func Plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// totalsText is the report's totals in one line.
func totalsText(t Totals) string {
	return fmt.Sprintf("%s, %s, %d over the size limit, %s, %s in no document", Plural(t.Documents, "document", "documents"), Bytes(int(t.Bytes)),
		t.TooLarge, Plural(t.Dangling, "dangling reference", "dangling references"), Plural(t.Uncovered, "source row", "source rows"))
}

// indexText describes an index in one line.
func indexText(ix IndexInfo) string {
	s := fmt.Sprintf("%s (%s)", ix.Name, ix.Keys)
	if ix.Unique {
		s += " unique"
	}
	if ix.Partial != "" {
		s += " partial " + ix.Partial
	}
	if ix.Default {
		s += "; default: " + ix.Reason
	}
	return s
}

func types(t map[string]int64) string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return t[keys[i]] > t[keys[j]] || t[keys[i]] == t[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		if len(keys) == 1 {
			parts[i] = k
		} else {
			parts[i] = fmt.Sprintf("%s(%d)", k, t[k])
		}
	}
	return strings.Join(parts, " ")
}

func pct(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(b))
}

// treeText renders the tables feeding a collection, one per line.
func treeText(n *TableNode, indent string, b *strings.Builder) {
	label := n.Table
	var notes []string
	if n.Field != "" {
		label = fmt.Sprintf("%s <- %s", n.Field, n.Table)
		notes = append(notes, n.Kind)
		if n.Object {
			notes = append(notes, "object")
		}
		if n.Limit > 0 {
			notes = append(notes, fmt.Sprintf("limit %d", n.Limit))
		}
		if n.Through != "" {
			notes = append(notes, "through "+n.Through)
		}
	}
	if n.Reads != "" {
		notes = append(notes, n.Reads)
	}
	if len(n.RowSecurity) > 0 {
		notes = append(notes, "filtered by row-level security: "+strings.Join(n.RowSecurity, ", "))
	}
	if len(notes) > 0 {
		label += " (" + strings.Join(notes, ", ") + ")"
	}
	fmt.Fprintf(b, "%s%s\n", indent, label)
	for _, c := range n.Children {
		treeText(c, indent+"  ", b)
	}
}

func writeText(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "denorm plan of %s (size limit %s; %s)\n\n", r.Mapping, Bytes(r.MaxDocSize), estimateNote(r))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "COLLECTION\tTABLE\tDOCUMENTS\tP50\tP95\tP99\tMAX\tOVER LIMIT\tDANGLING\t")
	for _, c := range r.Collections {
		var dang int64
		for _, ref := range c.References {
			dang += ref.Dangling
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t\n", c.Name, c.Table, c.Documents, Bytes(c.Size.P50), Bytes(c.Size.P95), Bytes(c.Size.P99), Bytes(c.Size.Max), c.TooLarge.Count, dang)
	}
	tw.Flush()
	fmt.Fprintf(&b, "total: %s\n", totalsText(r.Totals))
	if len(r.Indexes) > 0 || len(r.ShardKeys) > 0 {
		b.WriteString("\nindexes migrate creates:\n")
		for _, ix := range r.Indexes {
			fmt.Fprintf(&b, "  %s: %s\n", ix.Collection, indexText(ix))
		}
		for _, sk := range r.ShardKeys {
			fmt.Fprintf(&b, "  %s: shard key (%s)\n", sk.Collection, sk.Key)
		}
	}
	if len(r.Coverage) > 0 {
		b.WriteString("\ncoverage (source rows that reach a document):\n")
		b.WriteString(CoverageText(r.Coverage, "  "))
	}
	if len(r.Fanout) > 0 {
		fmt.Fprintf(&b, "\nfan-out (documents one change of a row makes sync rewrite; over %s flagged):\n", limitText(r.MaxFanout))
		b.WriteString(FanoutText(r.Fanout, r.MaxFanout, "  "))
	}
	for _, c := range r.Collections {
		fmt.Fprintf(&b, "\n== %s (%s from %s): %s from %s", c.Name, c.Kind, c.Table, Plural(c.Documents, "document", "documents"), Plural(c.Rows, "row", "rows"))
		if c.Rejected > 0 {
			fmt.Fprintf(&b, ", %d rejected", c.Rejected)
		}
		b.WriteString("\n")
		if s := c.OnDeleteText(); s != "" {
			fmt.Fprintf(&b, "  %s\n", s)
		}
		treeText(c.Tables, "  ", &b)
		fmt.Fprintf(&b, "  size: min %s  p50 %s  p95 %s  p99 %s  max %s  mean %s\n", Bytes(c.Size.Min), Bytes(c.Size.P50), Bytes(c.Size.P95), Bytes(c.Size.P99), Bytes(c.Size.Max), Bytes(int(c.Size.Mean)))
		if len(c.Arrays) > 0 {
			b.WriteString("  largest arrays:\n")
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			for i, a := range c.Arrays {
				if i == 5 {
					break
				}
				fmt.Fprintf(tw, "    %s\tmax %d\tp99 %d\tp50 %d\tin %s\n", a.Path, a.Max, a.P99, a.P50, a.MaxSource)
			}
			tw.Flush()
		}
		if c.TooLarge.Count > 0 {
			fmt.Fprintf(&b, "  OVER THE SIZE LIMIT: %s\n", Plural(c.TooLarge.Count, "document", "documents"))
			for _, d := range c.TooLarge.Docs {
				fmt.Fprintf(&b, "    %s (_id %s): %s\n", d.Source, d.ID, Bytes(d.Size))
			}
		}
		for _, ref := range c.References {
			switch {
			case ref.Skipped != "":
				fmt.Fprintf(&b, "  references %s -> %s: not checked (%s)\n", ref.Path, ref.Collection, ref.Skipped)
			default:
				fmt.Fprintf(&b, "  references %s -> %s: %d checked, %d dangling\n", ref.Path, ref.Collection, ref.Checked, ref.Dangling)
				for _, d := range ref.Examples {
					fmt.Fprintf(&b, "    %s in %s\n", d.Value, d.Source)
				}
			}
		}
		if len(c.SubMillisecond) > 0 {
			b.WriteString("  timestamps with digits below the millisecond (a BSON date drops them; timestamp: string keeps them):\n")
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			for _, l := range c.SubMillisecond {
				fmt.Fprintf(tw, "    %s\t%s\t%s\te.g. %s in %s\n", l.Path, lossColumn(l), Plural(l.Count, "value", "values"), l.Example, l.Source)
			}
			tw.Flush()
		}
		b.WriteString("  shape:\n")
		tw = tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, p := range c.Shape {
			fmt.Fprintf(tw, "    %s\t%s\t%s\n", p.Path, types(p.Types), pct(p.Present, p.Of))
		}
		tw.Flush()
		if c.Typical != nil {
			fmt.Fprintf(&b, "  typical document (%s, %s):\n    %s\n", c.Typical.Source, Bytes(c.Typical.Size), c.Typical.JSON)
		}
		if c.Largest != nil {
			fmt.Fprintf(&b, "  largest document (%s, %s):\n    %s\n", c.Largest.Source, Bytes(c.Largest.Size), c.Largest.JSON)
		}
	}
	b.WriteString("\nwarnings:\n")
	if len(r.Warnings) == 0 {
		b.WriteString("  none\n")
	}
	for _, wr := range r.Warnings {
		fmt.Fprintf(&b, "  %s [%s] %s: %s\n", strings.ToUpper(wr.Severity), wr.Rule, wr.Collection, wr.Message)
		if wr.Suggestion != "" {
			fmt.Fprintf(&b, "      suggestion: %s\n", wr.Suggestion)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lossColumn names the source of a field's dates for the reports.
func lossColumn(l PrecisionLoss) string {
	if l.Column == "" {
		return "(computed)"
	}
	return l.Column
}

func mdEsc(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func writeMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# denorm plan: %s\n\nSize limit %s; %s.\n\n", mdEsc(r.Mapping), Bytes(r.MaxDocSize), estimateNote(r))
	b.WriteString("| collection | table | documents | p50 | p95 | p99 | max | over limit |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range r.Collections {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %d |\n", mdEsc(c.Name), mdEsc(c.Table), c.Documents, Bytes(c.Size.P50), Bytes(c.Size.P95), Bytes(c.Size.P99), Bytes(c.Size.Max), c.TooLarge.Count)
	}
	fmt.Fprintf(&b, "\nTotal: %s.\n", totalsText(r.Totals))
	if len(r.Indexes) > 0 || len(r.ShardKeys) > 0 {
		b.WriteString("\n## Indexes\n\n")
		for _, ix := range r.Indexes {
			fmt.Fprintf(&b, "- %s: `%s`\n", mdEsc(ix.Collection), mdEsc(indexText(ix)))
		}
		for _, sk := range r.ShardKeys {
			fmt.Fprintf(&b, "- %s: shard key `%s`\n", mdEsc(sk.Collection), mdEsc(sk.Key))
		}
	}
	if len(r.Coverage) > 0 {
		b.WriteString("\n## Coverage\n\nSource rows that reach at least one document, per table read.\n\n| table | rows | in a document | in none | why, with examples |\n| --- | ---: | ---: | ---: | --- |\n")
		for _, c := range r.Coverage {
			var why []string
			for _, u := range c.Reasons {
				why = append(why, mdEsc(UncoveredText(u)))
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %s |\n", mdEsc(c.Table), c.Rows, c.Reached, c.Unreached, strings.Join(why, "<br>"))
		}
	}
	if len(r.Fanout) > 0 {
		fanoutMarkdown(&b, r.Fanout, r.MaxFanout)
	}
	b.WriteString("\n## Warnings\n\n")
	if len(r.Warnings) == 0 {
		b.WriteString("None.\n")
	}
	for _, wr := range r.Warnings {
		fmt.Fprintf(&b, "- **%s** `%s` %s: %s", wr.Severity, wr.Rule, mdEsc(wr.Collection), mdEsc(wr.Message))
		if wr.Suggestion != "" {
			fmt.Fprintf(&b, " — *%s*", mdEsc(wr.Suggestion))
		}
		b.WriteString("\n")
	}
	for _, c := range r.Collections {
		fmt.Fprintf(&b, "\n## %s\n\n%s from `%s`: %s from %s.\n\n", mdEsc(c.Name), c.Kind, c.Table, Plural(c.Documents, "document", "documents"), Plural(c.Rows, "row", "rows"))
		if s := c.OnDeleteText(); s != "" {
			fmt.Fprintf(&b, "%s.\n\n", mdEsc(s))
		}
		b.WriteString("```\n")
		treeText(c.Tables, "", &b)
		b.WriteString("```\n\n")
		if len(c.Arrays) > 0 {
			b.WriteString("| array | max | p99 | p50 | longest in |\n| --- | ---: | ---: | ---: | --- |\n")
			for _, a := range c.Arrays {
				fmt.Fprintf(&b, "| `%s` | %d | %d | %d | %s |\n", a.Path, a.Max, a.P99, a.P50, mdEsc(a.MaxSource))
			}
			b.WriteString("\n")
		}
		if c.TooLarge.Count > 0 {
			fmt.Fprintf(&b, "**%s over the size limit:**\n\n", Plural(c.TooLarge.Count, "document", "documents"))
			for _, d := range c.TooLarge.Docs {
				fmt.Fprintf(&b, "- %s: %s\n", mdEsc(d.Source), Bytes(d.Size))
			}
			b.WriteString("\n")
		}
		for _, ref := range c.References {
			fmt.Fprintf(&b, "- references `%s` → %s: %d checked, %d dangling %s\n", ref.Path, ref.Collection, ref.Checked, ref.Dangling, ref.Skipped)
		}
		if len(c.SubMillisecond) > 0 {
			b.WriteString("\nTimestamps with digits below the millisecond (a BSON date drops them; `timestamp: string` keeps them):\n\n| field | column | values | e.g. | in |\n| --- | --- | ---: | --- | --- |\n")
			for _, l := range c.SubMillisecond {
				fmt.Fprintf(&b, "| `%s` | %s | %d | %s | %s |\n", mdEsc(l.Path), mdEsc(lossColumn(l)), l.Count, l.Example, mdEsc(l.Source))
			}
		}
		b.WriteString("\n| field | types | present |\n| --- | --- | ---: |\n")
		for _, p := range c.Shape {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", mdEsc(p.Path), types(p.Types), pct(p.Present, p.Of))
		}
		if c.Typical != nil {
			fmt.Fprintf(&b, "\nTypical document (%s, %s):\n\n```json\n%s\n```\n", mdEsc(c.Typical.Source), Bytes(c.Typical.Size), c.Typical.JSON)
		}
		if c.Largest != nil {
			fmt.Fprintf(&b, "\nLargest document (%s, %s):\n\n```json\n%s\n```\n", mdEsc(c.Largest.Source), Bytes(c.Largest.Size), c.Largest.JSON)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// OnDeleteText says what sync does with the documents of deleted roots
// when it keeps them; "" for delete.
func (c *Collection) OnDeleteText() string {
	switch c.OnDelete {
	case "ignore":
		return "on delete: ignore (sync keeps the document of a deleted root as it was)"
	case "tombstone":
		return fmt.Sprintf("on delete: tombstone (sync keeps the document of a deleted root and sets %s to the deletion time)", c.Tombstone)
	}
	return ""
}
