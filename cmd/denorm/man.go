package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// newManCmd writes the man pages of every command, generated from the
// command definitions themselves, so they cannot drift from the flags. It is
// hidden (it is not part of the tool's job), but lives in the binary so that
// a `go install` user can write the pages of the very binary they run;
// `make man` and `make release` call it.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write the man pages (denorm.1, denorm-<command>.1, ...) into DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// The help texts are plain text; the generator reads Markdown.
			// This process ends after writing, so the tree is rewritten in place.
			manText(cmd.Root())
			return writeManPages(cmd.Root(), args[0])
		},
	}
}

// writeManPages writes one page per available command into dir. The pages
// are dated with the binary's build date (not the clock), so a release build
// gives the same pages every time.
func writeManPages(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	b := currentBuild()
	header := &doc.GenManHeader{Section: "1", Source: "denorm " + b.Version, Manual: "denorm manual"}
	if t, err := time.Parse(time.RFC3339, b.Date); err == nil {
		header.Date = &t
	}
	if err := doc.GenManTree(root, header, dir); err != nil {
		return fmt.Errorf("man pages in %s: %w", dir, err)
	}
	return nil
}

// manText rewrites the help texts of cmd and its subcommands as the Markdown
// the man page generator reads, so that they print as written: <dir>,
// *, _ and [ stay literal, and indented lines (tables, commands) stay lines.
func manText(cmd *cobra.Command) {
	cmd.Long = plainToMarkdown(cmd.Long)
	cmd.Short = escapeMarkdown(cmd.Short)
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) { f.Usage = escapeMarkdown(f.Usage) })
	for _, c := range cmd.Commands() {
		manText(c)
	}
}

// plainToMarkdown turns a help text into Markdown: a paragraph whose lines
// are all indented becomes a preformatted block, every other paragraph is
// escaped text.
func plainToMarkdown(s string) string {
	paras := strings.Split(strings.TrimSpace(s), "\n\n")
	for i, p := range paras {
		lines := strings.Split(p, "\n")
		indented := true
		for _, l := range lines {
			if !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
				indented = false
			}
		}
		for j, l := range lines {
			if indented {
				lines[j] = "    " + l
			} else {
				lines[j] = escapeMarkdown(l)
			}
		}
		paras[i] = strings.Join(lines, "\n")
	}
	return strings.Join(paras, "\n\n")
}

var (
	markdownSpecial = regexp.MustCompile("[\\\\`*_\\[\\]<>]")
	markdownLead    = regexp.MustCompile(`^(\s*)([#>+-]|\d+\.)`)
)

// escapeMarkdown makes one line of text literal Markdown: special characters
// are escaped, and so is a line start that would make a heading, quote or list.
func escapeMarkdown(s string) string {
	s = markdownSpecial.ReplaceAllString(s, `\$0`)
	return markdownLead.ReplaceAllStringFunc(s, func(m string) string {
		n := len(m) - len(strings.TrimLeft(m, " \t"))
		lead := m[n:]
		if strings.HasSuffix(lead, ".") {
			return m[:n] + lead[:len(lead)-1] + `\.`
		}
		return m[:n] + `\` + lead
	})
}
