package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestManPages runs `denorm man DIR` and checks the pages against the
// command tree: one page per available command and no other, each with its
// header, name, synopsis, every flag, the help text word for word (so <dir>,
// _id and indented tables survive the Markdown step), and SEE ALSO pointing
// only to pages that exist. groff, when installed (it is on Debian with
// man-db; .ci/run installs groff-base), must format every page without a
// warning. The pages are generated, never committed: make man and make
// release write them from the binary, so they cannot fall behind the flags.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "man", dir); code != 0 {
		t.Fatalf("denorm man: exit %d\n%s%s", code, out, errs)
	}
	root := newRootCmd(&globals{})
	root.InitDefaultCompletionCmd() // Execute adds it; it is a command users have
	cmds := map[string]*cobra.Command{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = c
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
	}
	walk(root)
	var want, got []string
	for name := range cmds {
		want = append(want, name)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		got = append(got, e.Name())
	}
	sort.Strings(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("man pages (-commands +pages):\n%s", d)
	}
	for _, must := range []string{"denorm.1", "denorm-migrate.1", "denorm-plan.1", "denorm-verify.1", "denorm-version.1"} {
		if cmds[must] == nil {
			t.Errorf("no %s", must)
		}
	}
	if cmds["denorm-man.1"] != nil {
		t.Error("the hidden man command has a page")
	}

	groff, _ := exec.LookPath("groff")
	for name, c := range cmds {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			title := strings.ToUpper(strings.TrimSuffix(name, ".1"))
			if !regexp.MustCompile(`(?m)^\.TH "` + regexp.QuoteMeta(title) + `" "1" "[A-Z][a-z]{2} \d{4}" "denorm [^"]+" "denorm manual"$`).MatchString(page) {
				t.Errorf(".TH header missing or malformed:\n%.300s", page)
			}
			for _, sec := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"} {
				if !strings.Contains(page, "\n.SH "+sec+"\n") {
					t.Errorf("no %s section", sec)
				}
			}
			if !strings.Contains(page, strings.TrimSuffix(name, ".1")+" - ") {
				t.Errorf("NAME does not start with the page's command")
			}
			if !regexp.MustCompile(`(?m)^\\fB` + regexp.QuoteMeta(c.CommandPath()) + `( .*)?\\fP$`).MatchString(page) {
				t.Errorf("SYNOPSIS lacks %q", c.CommandPath())
			}
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && !strings.Contains(page, `\fB--`+f.Name+`\fP`) {
					t.Errorf("flag --%s is not on the page", f.Name)
				}
			})
			c.InheritedFlags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden && !strings.Contains(page, `\fB--`+f.Name+`\fP`) {
					t.Errorf("inherited flag --%s is not on the page", f.Name)
				}
			})
			text := c.Long
			if text == "" {
				text = c.Short
			}
			if !strings.Contains(words(roffText(page)), words(text)) {
				t.Errorf("the page does not hold the help text word for word:\nhelp: %s\npage: %s", words(text), words(roffText(page)))
			}
			for _, ref := range regexp.MustCompile(`\\fB([a-z-]+)\(1\)\\fP`).FindAllStringSubmatch(page, -1) {
				if cmds[ref[1]+".1"] == nil {
					t.Errorf("SEE ALSO names %s(1), which has no page", ref[1])
				}
			}
			if groff != "" {
				// -ww: every warning; -Wbreak: but not lines too long to justify.
				out, err := exec.Command(groff, "-man", "-Tutf8", "-ww", "-Wbreak", "-z", filepath.Join(dir, name)).CombinedOutput()
				if err != nil || len(out) > 0 {
					t.Errorf("groff: %v\n%s", err, out)
				}
			}
		})
	}
	if groff == "" {
		t.Log("groff is not installed: the pages were checked for structure only")
	}
}

// roffText is the text of a man page: requests dropped, escapes resolved.
func roffText(page string) string {
	var lines []string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, ".") {
			continue
		}
		l = strings.NewReplacer(`\fB`, "", `\fI`, "", `\fP`, "", `\fR`, "", `\&`, "", `\-`, "-", `\e`, `\`, `\(aq`, "'", `\(ga`, "`", `\(rs`, `\`).Replace(l)
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

func words(s string) string { return strings.Join(strings.Fields(s), " ") }
