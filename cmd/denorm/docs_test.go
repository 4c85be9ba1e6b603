package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"golang.org/x/tools/txtar"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/mappings"
)

// The docs tests (issue 28): the README is a map of docs/*.md, and what the
// pages say is kept true by the suite. They read the repository's Markdown
// only and need no server, except TestDocsMappingsValidate.

// docPage is one Markdown file of the docs, parsed just enough: headings
// (as anchors), links outside code, and fenced code blocks.
type docPage struct {
	path     string // relative to the repository root, with slashes
	lines    []string
	anchors  map[string]bool
	headings []docHeading
	links    []docLink
	blocks   []docBlock
}

type docHeading struct {
	level int
	text  string
	slug  string
	line  int
}

type docLink struct {
	target string
	image  bool
	line   int
}

type docBlock struct {
	lang      string
	line      int // the line of the opening fence (1-based)
	lines     []string
	notATest  string // the reason of a <!-- not-a-test: reason --> before it
	firstLine int    // the block's first content line (1-based)
}

var (
	headingRE  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	anchorRE   = regexp.MustCompile(`<a id="([^"]+)"`)
	linkRE     = regexp.MustCompile(`(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	notATestRE = regexp.MustCompile(`<!--\s*not-a-test:\s*(.*?)\s*-->`)
)

// slugify is GitHub's anchor of a heading: its text without Markdown
// (links give their text, code its content), lower case, with every
// character but letters, digits, spaces, '-' and '_' removed, spaces made
// '-'.
func slugify(h string) string {
	h = linkRE.ReplaceAllString(h, "$2")
	h = strings.ReplaceAll(h, "`", "")
	h = regexp.MustCompile(`<[^>]+>`).ReplaceAllString(h, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// readDocPage parses the Markdown file at root/rel.
func readDocPage(t *testing.T, root, rel string) *docPage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	p := &docPage{path: rel, lines: strings.Split(string(data), "\n"), anchors: map[string]bool{}}
	seen := map[string]int{}
	var block *docBlock
	notATest := ""
	for i, l := range p.lines {
		trimmed := strings.TrimSpace(l)
		if strings.HasPrefix(trimmed, "```") {
			if block == nil {
				block = &docBlock{lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), line: i + 1, firstLine: i + 2, notATest: notATest}
				notATest = ""
			} else {
				p.blocks = append(p.blocks, *block)
				block = nil
			}
			continue
		}
		if block != nil {
			block.lines = append(block.lines, l)
			continue
		}
		if m := notATestRE.FindStringSubmatch(l); m != nil {
			notATest = m[1]
		} else if trimmed != "" {
			notATest = ""
		}
		for _, a := range anchorRE.FindAllStringSubmatch(l, -1) {
			p.anchors[a[1]] = true
		}
		if m := headingRE.FindStringSubmatch(l); m != nil {
			s := slugify(m[2])
			if n := seen[s]; n > 0 {
				seen[s]++
				s = fmt.Sprintf("%s-%d", s, n)
			} else {
				seen[s] = 1
			}
			p.anchors[s] = true
			p.headings = append(p.headings, docHeading{level: len(m[1]), text: m[2], slug: s, line: i + 1})
		}
		for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(l, ""), -1) {
			p.links = append(p.links, docLink{target: m[3], image: m[1] == "!", line: i + 1})
		}
	}
	if block != nil {
		t.Errorf("%s:%d: a code block is never closed", rel, block.line)
	}
	return p
}

// docPages is README.md and every docs/*.md page (not docs/_pending,
// which holds text waiting to be merged into them).
func docPages(t *testing.T) (string, map[string]*docPage) {
	t.Helper()
	root := testenv.Root(t)
	pages := map[string]*docPage{"README.md": readDocPage(t, root, "README.md")}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(files) < 10 {
		t.Fatalf("docs pages: %v (%d found)", err, len(files))
	}
	for _, f := range files {
		rel := "docs/" + filepath.Base(f)
		pages[rel] = readDocPage(t, root, rel)
	}
	return root, pages
}

// resolveLink is a relative link's target from page from: the path
// relative to the repository root, and its fragment. External links
// (a scheme) give ok false.
func resolveLink(from, target string) (path, frag string, ok bool) {
	if regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) {
		return "", "", false
	}
	path, frag, _ = strings.Cut(target, "#")
	if path == "" {
		return from, frag, true
	}
	return filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), path))), frag, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestDocsLinks: every relative link of README.md and docs/*.md names a
// file that exists, and its #anchor a heading (or <a id>) of that file;
// every docs page is reachable from README.md by following links; the
// README stays a map (at most 250 lines).
func TestDocsLinks(t *testing.T) {
	root, pages := docPages(t)
	others := map[string]*docPage{}
	anchorsOf := func(path string) map[string]bool {
		if p := pages[path]; p != nil {
			return p.anchors
		}
		if p := others[path]; p != nil {
			return p.anchors
		}
		p := readDocPage(t, root, path)
		others[path] = p
		return p.anchors
	}
	// The other Markdown of the repository that links into the docs is
	// checked too (not testdata/pagila/README.md: Pagila's own).
	linking := map[string]*docPage{}
	for name, p := range pages {
		linking[name] = p
	}
	for _, name := range []string{"SECURITY.md", "mappings/README.md", "testdata/examples/README.md"} {
		linking[name] = readDocPage(t, root, name)
		others[name] = linking[name]
	}
	checked := 0
	for _, name := range sortedKeys(linking) {
		p := linking[name]
		for _, l := range p.links {
			path, frag, ok := resolveLink(name, l.target)
			if !ok {
				continue
			}
			checked++
			if strings.HasPrefix(path, "../") {
				t.Errorf("%s:%d: link %s leaves the repository", name, l.line, l.target)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(path))); err != nil {
				t.Errorf("%s:%d: link %s: no file %s", name, l.line, l.target, path)
				continue
			}
			if frag != "" {
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s:%d: link %s: an anchor into a file that is not Markdown", name, l.line, l.target)
				} else if !anchorsOf(path)[frag] {
					t.Errorf("%s:%d: link %s: %s has no heading or anchor #%s", name, l.line, l.target, path, frag)
				}
			}
		}
	}
	if checked < 200 {
		t.Errorf("only %d relative links checked: is the parser broken?", checked)
	}

	// Reachability from README.md, through links between the pages.
	reached := map[string]bool{"README.md": true}
	queue := []string{"README.md"}
	for len(queue) > 0 {
		p := pages[queue[0]]
		queue = queue[1:]
		for _, l := range p.links {
			path, _, ok := resolveLink(p.path, l.target)
			if ok && pages[path] != nil && !reached[path] {
				reached[path] = true
				queue = append(queue, path)
			}
		}
	}
	for _, name := range sortedKeys(pages) {
		if !reached[name] {
			t.Errorf("%s cannot be reached from README.md by links", name)
		}
	}
	if n := len(pages["README.md"].lines); n > 250 {
		t.Errorf("README.md has %d lines: it is the map, the reference goes into docs/ (at most 250)", n)
	}
}

// TestDocsContents: every docs page, and the README, starts with a
// contents list ("Contents:" before its first section) that links every
// section (##) of the page, in order.
func TestDocsContents(t *testing.T) {
	_, pages := docPages(t)
	for _, name := range sortedKeys(pages) {
		p := pages[name]
		if len(p.headings) == 0 || p.headings[0].level != 1 || p.headings[0].line != 1 {
			t.Errorf("%s: does not start with a title (# ...)", name)
			continue
		}
		var sections []docHeading
		for _, h := range p.headings[1:] {
			if h.level == 2 {
				sections = append(sections, h)
			}
		}
		if len(sections) == 0 {
			t.Errorf("%s: no sections (##) for a contents list to list", name)
			continue
		}
		start := -1
		for i, l := range p.lines[:sections[0].line-1] {
			if strings.TrimSpace(l) == "Contents:" {
				start = i
			}
		}
		if start < 0 {
			t.Errorf("%s: no contents list (a line 'Contents:') before its first section %q", name, sections[0].text)
			continue
		}
		var listed []string
		for _, l := range p.lines[start+1 : sections[0].line-1] {
			if m := regexp.MustCompile(`^\s*- \[.*\]\(#([^)]+)\)\s*$`).FindStringSubmatch(l); m != nil {
				listed = append(listed, m[1])
			} else if strings.TrimSpace(l) != "" && len(listed) > 0 {
				break
			}
		}
		j := 0
		for _, s := range sections {
			for j < len(listed) && listed[j] != s.slug {
				j++
			}
			if j == len(listed) {
				t.Errorf("%s: the contents list lacks section %q (#%s), or lists it out of order", name, s.text, s.slug)
				break
			}
		}
	}
}

// testNameRE finds the names of tests, benchmarks and fuzz targets a page
// cites.
var testNameRE = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z0-9]\w*\*?`)

// repoTestFuncs is every func TestX, BenchmarkX and FuzzX of the
// repository's test files.
func repoTestFuncs(t *testing.T, root string) map[string]bool {
	t.Helper()
	funcs := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w+)\(`)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			funcs[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return funcs
}

// TestDocsClaims: docs/claims.md has a section for the README and for
// every docs page (a heading linking the page), and every test it (or any
// docs page) cites exists as a func TestX, BenchmarkX or FuzzX somewhere
// in the repository.
func TestDocsClaims(t *testing.T) {
	root, pages := docPages(t)
	funcs := repoTestFuncs(t, root)
	if !funcs["TestDocsClaims"] || len(funcs) < 300 {
		t.Fatalf("found %d test functions: is the walk broken?", len(funcs))
	}
	claims := pages["docs/claims.md"]
	covered := map[string]bool{}
	for _, h := range claims.headings {
		if h.level != 2 {
			continue
		}
		for _, m := range linkRE.FindAllStringSubmatch(h.text, -1) {
			if path, _, ok := resolveLink(claims.path, m[3]); ok {
				covered[path] = true
			}
		}
	}
	for _, name := range sortedKeys(pages) {
		if name != "docs/claims.md" && !covered[name] {
			t.Errorf("docs/claims.md has no section (## heading linking it) for %s", name)
		}
	}
	cited := 0
	for _, name := range sortedKeys(pages) {
		for i, l := range pages[name].lines {
			for _, tn := range testNameRE.FindAllString(l, -1) {
				cited++
				if prefix, ok := strings.CutSuffix(tn, "*"); ok {
					if !hasPrefixKey(funcs, prefix) {
						t.Errorf("%s:%d: cites %s, and no func of the repository's tests starts so", name, i+1, tn)
					}
					continue
				}
				if !funcs[tn] {
					t.Errorf("%s:%d: cites %s, which is no func in the repository's tests", name, i+1, tn)
				}
			}
		}
	}
	if cited < 100 {
		t.Errorf("only %d test names cited", cited)
	}
}

func hasPrefixKey(m map[string]bool, prefix string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// commandLines is every denorm command line of a page's code blocks:
// in a console block the lines after a "$ " prompt, in a sh block (or one
// without a language) the lines that start with denorm or bin/denorm.
// Output blocks (text, json, yaml, sql) and blocks marked not-a-test hold
// none. A line ending in a backslash goes on on the next.
func commandLines(p *docPage) (lines []docCommand, skipped int) {
	for _, b := range p.blocks {
		if b.notATest != "" {
			skipped++
			continue
		}
		console := b.lang == "console"
		if !console && b.lang != "sh" && b.lang != "" && b.lang != "bash" {
			continue
		}
		for i := 0; i < len(b.lines); i++ {
			l, at := strings.TrimSpace(b.lines[i]), b.firstLine+i
			if console {
				var ok bool
				if l, ok = strings.CutPrefix(l, "$ "); !ok {
					continue
				}
			}
			for strings.HasSuffix(l, `\`) && i+1 < len(b.lines) {
				i++
				l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(b.lines[i])
			}
			words := shellWords(l)
			for len(words) > 0 && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(words[0]) {
				words = words[1:]
			}
			if len(words) == 0 || (words[0] != "denorm" && words[0] != "bin/denorm") {
				continue
			}
			lines = append(lines, docCommand{where: fmt.Sprintf("%s:%d", p.path, at), args: words[1:]})
		}
	}
	return lines, skipped
}

type docCommand struct {
	where string
	args  []string
}

// shellWords splits a command line as a shell would, enough for the docs:
// quotes, and the end of the command at a comment, a pipe, a redirection,
// ';' or '&&'.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	in := false // a word is being read
	quote := rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case !in && (r == '#' || r == '|' || r == '>' || r == '<' || r == ';' || r == '&'):
			return words
		case in && (r == '|' || r == '>' || r == ';' || r == '&'):
			if cur := w.String(); cur == "2" || cur == "1" {
				return words // 2>&1, 2> file
			}
			return append(words, w.String())
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// parseCommandLine parses args (without the program's name) with the real
// command tree, as main would, without running anything: the command must
// exist, every flag exist and take its value's type, and the positional
// arguments be what the command takes. A word "..." on its own stands for
// arguments left out, as the docs write it, and is dropped.
func parseCommandLine(args []string) error {
	var kept []string
	for _, a := range args {
		if a != "..." {
			kept = append(kept, a)
		}
	}
	root := newRootCmd(&globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	cmd, rest, err := root.Find(kept)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if cmd == root && len(cmd.Flags().Args()) > 0 {
		return fmt.Errorf("unknown command %q", cmd.Flags().Args()[0])
	}
	return cmd.ValidateArgs(cmd.Flags().Args())
}

// TestDocsCommandLines: every denorm command line in the code blocks of
// README.md and docs/*.md parses with the real command line parser (no
// server is connected): a renamed command or flag, or a value of the
// wrong type, fails here. Blocks marked <!-- not-a-test: reason --> are
// counted and logged.
func TestDocsCommandLines(t *testing.T) {
	_, pages := docPages(t)
	total, skipped := 0, 0
	for _, name := range sortedKeys(pages) {
		lines, sk := commandLines(pages[name])
		skipped += sk
		for _, c := range lines {
			total++
			if err := parseCommandLine(c.args); err != nil {
				t.Errorf("%s: denorm %s: %v", c.where, strings.Join(c.args, " "), err)
			}
		}
	}
	t.Logf("%d command lines parsed, %d blocks marked not-a-test", total, skipped)
	if total < 30 {
		t.Errorf("only %d command lines found in the docs", total)
	}
	// The parser refuses what it must.
	for _, bad := range [][]string{
		{"migrat", "--mapping", "m.yaml"},
		{"migrate", "--mapings", "m.yaml"},
		{"migrate", "--batch-size", "many"},
		{"version", "extra"},
	} {
		if err := parseCommandLine(bad); err == nil {
			t.Errorf("denorm %s parsed", strings.Join(bad, " "))
		}
	}
}

// examplesCatalog is the catalog of the bundled example database
// (testdata/examples/seed.sql), joined from the resolver corpus' cases
// that hold it (seed: examples; TestResolveCatalogSnapshots checks them
// against the live catalog).
func examplesCatalog(t *testing.T, root string) *mappings.Catalog {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "mappings", "testdata", "resolve", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	cat := &mappings.Catalog{Tables: map[string]*mappings.Table{}}
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^seed: examples\s*$`).Match(ar.Comment) {
			continue
		}
		for _, file := range ar.Files {
			if file.Name != "catalog.json" {
				continue
			}
			var c mappings.Catalog
			if err := json.Unmarshal(file.Data, &c); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for k, v := range c.Tables {
				cat.Tables[k] = v
			}
		}
	}
	if len(cat.Tables) < 10 {
		t.Fatalf("the examples' catalog has %d tables", len(cat.Tables))
	}
	return cat
}

// docMapping is a mapping file written in the docs.
type docMapping struct {
	where string
	text  string
	// examples: every table it names is one of the example database's.
	examples bool
}

// docMappings parses every yaml block of the docs: a mapping (a top-level
// collections key) must parse with the mappings package (structure and
// meaning), and resolve against the examples' catalog when every table it
// names is there; any other YAML must at least be YAML.
func docMappings(t *testing.T) []docMapping {
	t.Helper()
	root, pages := docPages(t)
	cat := examplesCatalog(t, root)
	var out []docMapping
	tableRE := regexp.MustCompile(`\btable:\s*([A-Za-z0-9_."]+)`)
	for _, name := range sortedKeys(pages) {
		for _, b := range pages[name].blocks {
			if b.lang != "yaml" || b.notATest != "" {
				continue
			}
			where := fmt.Sprintf("%s:%d", name, b.firstLine)
			text := strings.Join(b.lines, "\n") + "\n"
			var top map[string]any
			if err := yaml.Unmarshal([]byte(text), &top); err != nil {
				t.Errorf("%s: not YAML: %v", where, err)
				continue
			}
			if _, ok := top["collections"]; !ok {
				continue
			}
			f, err := mappings.Parse(where, []byte(text))
			if err != nil {
				t.Errorf("%s: the mapping does not parse:\n%v", where, err)
				continue
			}
			m := docMapping{where: where, text: text, examples: true}
			for _, tm := range tableRE.FindAllStringSubmatch(text, -1) {
				if cat.Tables["public."+tm[1]] == nil && cat.Tables[tm[1]] == nil {
					m.examples = false
				}
			}
			if m.examples {
				if _, problems := mappings.ResolveAll(f, cat); len(problems) > 0 {
					t.Errorf("%s: the mapping does not resolve against the examples' catalog:\n%v", where, problems)
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// TestDocsMappings: the docs' mapping files parse, and those over the
// example database resolve against its catalog (no server needed).
func TestDocsMappings(t *testing.T) {
	ms := docMappings(t)
	n := 0
	for _, m := range ms {
		if m.examples {
			n++
		}
	}
	t.Logf("%d mappings parsed, %d resolved against the examples' catalog", len(ms), n)
	if n == 0 {
		t.Error("no mapping of the docs resolved against the examples' catalog")
	}
}

// TestDocsMappingsValidate: the docs' mappings over the example database
// pass `denorm validate --source` against that database, loaded from
// testdata/examples/seed.sql.
func TestDocsMappingsValidate(t *testing.T) {
	src := seedDB(t)
	n := 0
	for _, m := range docMappings(t) {
		if !m.examples {
			continue
		}
		n++
		file := filepath.Join(t.TempDir(), "mapping.yaml")
		if err := os.WriteFile(file, []byte(m.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, errs := runCLI(t, "validate", "--mapping", file, "--source", src); code != 0 {
			t.Errorf("%s: validate: exit %d\n%s%s", m.where, code, out, errs)
		}
	}
	if n == 0 {
		t.Error("no mapping validated")
	}
}

// TestHelpExamples: every command's help has at least two examples, each
// a denorm command line of that command that parses, and each is in the
// command's man page (denorm man) as its help has it.
func TestHelpExamples(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := runCLI(t, "man", dir); code != 0 {
		t.Fatalf("denorm man: exit %d\n%s%s", code, out, errs)
	}
	root := newRootCmd(&globals{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				walk(sub)
			}
		}
		if c == root {
			return
		}
		page, err := os.ReadFile(filepath.Join(dir, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"))
		if err != nil {
			t.Error(err)
		}
		n := 0
		for _, l := range strings.Split(c.Example, "\n") {
			if !bytes.Contains(page, []byte(l)) {
				t.Errorf("%s: the man page lacks the example line %q", c.CommandPath(), l)
			}
			words := shellWords(strings.TrimSpace(l))
			if len(words) == 0 || words[0] != "denorm" {
				continue
			}
			n++
			if err := parseCommandLine(words[1:]); err != nil {
				t.Errorf("%s: example %q: %v", c.CommandPath(), strings.TrimSpace(l), err)
			}
			if len(words) < 2 || (words[1] != c.Name() && !(c.Name() == "version" && words[1] == "--version")) {
				t.Errorf("%s: example %q is of another command", c.CommandPath(), strings.TrimSpace(l))
			}
		}
		if n < 2 {
			t.Errorf("%s: %d examples in its help, want at least 2", c.CommandPath(), n)
		}
	}
	walk(root)
}

// TestReadmeWalk runs the README's five-minute walk as a new user would:
// every "$ denorm" line of its console blocks, in order, with SRC the
// bundled example database (seed.sql) and DST a FerretDB database, in an
// empty directory, and the UPDATE the README makes before sync. Each
// command must exit 0 and print what the README shows of it.
func TestReadmeWalk(t *testing.T) {
	src := seedDB(t)
	testenv.Exec(t, src, "ANALYZE")
	dst, _ := testenv.MongoDB(t)
	_, pages := docPages(t)
	t.Chdir(t.TempDir())
	want := map[string][]string{
		"validate": {"shop.yaml: valid against the source database (7 collections)"},
		"plan":     {"total: 19 documents", "0 over the size limit, 0 dangling references", "indexes migrate creates:"},
		"migrate":  {"bucket collections count pages as documents (comments: 4 pages of 252 rows)", "target: " + dst},
		"verify":   {"result: identical"},
		"sync":     {"sync job shop (diff): current as of"},
	}
	ran := map[string]bool{}
	for _, c := range commandLinesOf(t, pages["README.md"]) {
		args := make([]string, len(c.args))
		for i, a := range c.args {
			args[i] = strings.NewReplacer("$SRC", src, "$DST", dst).Replace(a)
		}
		if args[0] == "sync" {
			testenv.Exec(t, src, "UPDATE person SET last_name = 'Andersson' WHERE id = 1")
		}
		code, out, errs := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%s: denorm %s: exit %d\n%s%s", c.where, strings.Join(c.args, " "), code, out, errs)
		}
		ran[args[0]] = true
		if slices.Contains(args, "-o") {
			continue // a report written to a file
		}
		for _, w := range want[args[0]] {
			if !strings.Contains(out, w) {
				t.Errorf("%s: denorm %s does not print %q:\n%s", c.where, strings.Join(c.args, " "), w, out)
			}
		}
		if args[0] == "sync" && !regexp.MustCompile(`(?m)^people\s+1\s+0\s+1$`).MatchString(out) {
			t.Errorf("sync did not write the one changed person:\n%s", out)
		}
	}
	for _, cmd := range []string{"advise", "validate", "plan", "migrate", "verify", "sync"} {
		if !ran[cmd] {
			t.Errorf("the README's walk has no %s step", cmd)
		}
	}
	if _, err := os.Stat("plan.html"); err != nil {
		t.Errorf("plan --format html: %v", err)
	}
}

// commandLinesOf is commandLines, failing the test on a block marked
// not-a-test (the README's walk has none).
func commandLinesOf(t *testing.T, p *docPage) []docCommand {
	t.Helper()
	lines, skipped := commandLines(p)
	if skipped > 0 {
		t.Errorf("%s: %d blocks marked not-a-test", p.path, skipped)
	}
	return lines
}
