package advise

import (
	"fmt"
	"strings"
)

// Report renders the choices as a Markdown page: one row per table with
// what the draft does with it, where its rows go, and why. Names come from
// the database and may hold any character, so every text is escaped.
func Report(schema string, choices []Choice) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# denorm advise: schema %s\n\n", MarkdownText(schema))
	b.WriteString("| table | choice | where | reason |\n| --- | --- | --- | --- |\n")
	for _, c := range choices {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", MarkdownText(c.Table), MarkdownText(c.Action), MarkdownText(c.Target), MarkdownText(c.Reason))
	}
	return b.String()
}

// MarkdownText escapes s for Markdown text (a table cell included): HTML
// is shown, not interpreted; emphasis, code, links and cell separators are
// taken literally; line breaks become spaces.
func MarkdownText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\\', '`', '*', '_', '|', '[', ']', '(', ')', '#', '~', '!', '{', '}':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
