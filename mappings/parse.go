package mappings

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"go.yaml.in/yaml/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is the JSON Schema of the mapping file (draft 2020-12), published
// for editors as mappings/schema.json.
//
//go:embed schema.json
var Schema []byte

// Problem is one thing wrong with a mapping file.
type Problem struct {
	File string
	Pos  Pos
	Msg  string
}

func (p Problem) String() string {
	if p.Pos.Line == 0 {
		return fmt.Sprintf("%s: %s", p.File, p.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Pos.Line, p.Pos.Col, p.Msg)
}

// Problems is every problem found in a mapping file, in file order. It is
// the error type of Load, Parse and Resolve.
type Problems []Problem

func (ps Problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Sorted orders problems by position.
func (ps Problems) Sorted() Problems { return ps.sorted() }

func (ps Problems) sorted() Problems {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].Pos.Line != ps[j].Pos.Line {
			return ps[i].Pos.Line < ps[j].Pos.Line
		}
		return ps[i].Pos.Col < ps[j].Pos.Col
	})
	return ps
}

// IsProblems reports whether err is (or wraps) a Problems list.
func IsProblems(err error) bool {
	var ps Problems
	return errors.As(err, &ps)
}

// MaxFileSize is the largest mapping file Load reads: 4 MiB. A mapping
// is written by hand or drafted by advise (about 1.5 KiB per table, so a
// schema of 1,000 tables takes ~1.5 MiB); a larger file is a mistake (the
// wrong file, a device, a generated stream), and the YAML node tree the
// parser builds takes many times the file's size in memory, which must
// stay bounded.
const MaxFileSize = 4 << 20

// Load reads and parses the mapping file at path (LoadContext without a
// context).
func Load(path string) (*File, error) {
	return LoadContext(context.Background(), path)
}

// LoadContext reads and parses the mapping file at path. Reading stops
// when ctx ends (Ctrl-C while waiting for a FIFO's writer or reading a
// slow device): the error is then ctx's. A file that cannot be read or is
// over MaxFileSize is reported as Problems, like everything else wrong
// with the file (exit code 2 for the command line).
func LoadContext(ctx context.Context, path string) (*File, error) {
	data, err := readLimited(ctx, path, MaxFileSize)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read mapping %s: %w", path, ctx.Err())
		}
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	return Parse(path, data)
}

// readLimited reads at most limit bytes of the file at path, failing on a
// larger one (by its size when it is a regular file, before reading). The
// open and the reads run in a goroutine that ctx does not wait for: open
// blocks on a FIFO until a writer comes, and no system call interrupts
// it; a read is interrupted by closing the file.
func readLimited(ctx context.Context, path string, limit int64) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	var (
		mu     sync.Mutex
		file   *os.File
		closed bool
	)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			done <- result{err: fmt.Errorf("cannot read the mapping file: %w", err)}
			return
		}
		mu.Lock()
		if closed {
			mu.Unlock()
			f.Close()
			return
		}
		file = f
		mu.Unlock()
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
			done <- result{err: sizeError(st.Size(), limit)}
			return
		}
		data, err := io.ReadAll(io.LimitReader(f, limit+1))
		switch {
		case err != nil:
			err = fmt.Errorf("cannot read the mapping file: %w", err)
		case int64(len(data)) > limit:
			err = sizeError(-1, limit)
		}
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-ctx.Done():
		mu.Lock()
		closed = true
		if file != nil {
			file.Close()
		}
		mu.Unlock()
		return nil, ctx.Err()
	}
}

func sizeError(size, limit int64) error {
	what := "more than"
	if size >= 0 {
		what = fmt.Sprintf("%d bytes,", size)
	}
	return fmt.Errorf("the mapping file is %s over the limit of %d bytes (%d MiB): a mapping file is written by hand or by denorm advise, and a larger one is the wrong file", what, limit, limit>>20)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse parses a mapping file: YAML syntax, then structure (the JSON
// Schema), then meaning. It returns every problem found at the deepest
// level reached, as Problems.
func Parse(path string, data []byte) (*File, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, Problems{{File: path, Pos: Pos{line, 1}, Msg: "invalid YAML: " + m[2]}}
		}
		if msg == "EOF" {
			msg = "the file is empty"
		}
		return nil, Problems{{File: path, Pos: Pos{1, 1}, Msg: strings.TrimPrefix(msg, "yaml: ")}}
	}
	// One document: a second one would be ignored silently (an empty
	// one, a trailing ---, is harmless).
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, Problems{{File: path, Pos: Pos{1, 1}, Msg: "after the first YAML document: " + strings.TrimPrefix(err.Error(), "yaml: ")}}
		}
		if len(next.Content) == 0 || (len(next.Content) == 1 && next.Content[0].Tag == "!!null") {
			continue
		}
		return nil, Problems{{File: path, Pos: Pos{next.Line, next.Column}, Msg: "a second YAML document starts here: a mapping file is one document (remove the --- separator and what follows, or merge the documents)"}}
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if ps := checkStructure(path, doc); len(ps) > 0 {
		return nil, ps
	}
	f := &File{Path: path}
	if err := doc.Decode(f); err != nil {
		return nil, Problems{{File: path, Pos: Pos{doc.Line, doc.Column}, Msg: err.Error()}}
	}
	if f.Numeric == "" {
		f.Numeric = NumericDecimal
	}
	if ps := f.check(); len(ps) > 0 {
		return nil, ps.sorted()
	}
	return f, nil
}

var (
	schemaOnce sync.Once
	schemaDoc  *jsonschema.Schema
	schemaErr  error
)

func compiledSchema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mapping.json", doc); err != nil {
			schemaErr = err
			return
		}
		schemaDoc, schemaErr = c.Compile("mapping.json")
	})
	return schemaDoc, schemaErr
}

// checkStructure validates the YAML tree against the JSON Schema and turns
// each failure into a Problem at the offending node.
func checkStructure(path string, doc *yaml.Node) Problems {
	sch, err := compiledSchema()
	if err != nil {
		return Problems{{File: path, Msg: "internal: mapping schema: " + err.Error()}}
	}
	nodes := map[string]*yaml.Node{}
	w := walker{nodes: nodes, open: map[*yaml.Node]bool{}}
	inst, err := w.value(doc, "")
	if err != nil {
		pos := Pos{doc.Line, doc.Column}
		var pe posError
		if errors.As(err, &pe) {
			pos = pe.pos
		}
		return Problems{{File: path, Pos: pos, Msg: err.Error()}}
	}
	if len(w.bad) > 0 {
		ps := make(Problems, len(w.bad))
		for i, e := range w.bad {
			ps[i] = Problem{File: path, Pos: e.pos, Msg: e.msg}
		}
		return ps.sorted()
	}
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return Problems{{File: path, Msg: verr.Error()}}
	}
	printer := message.NewPrinter(language.English)
	seen := map[string]bool{}
	var ps Problems
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if causes, one := oneOfCauses(e, nodes, path, doc); one != nil {
			ps = append(ps, *one)
			return
		} else if causes != nil {
			for _, c := range causes {
				walk(c)
			}
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		ptr := "/" + strings.Join(escapeAll(e.InstanceLocation), "/")
		if len(e.InstanceLocation) == 0 {
			ptr = ""
		}
		n := nodes[ptr]
		pos := Pos{doc.Line, doc.Column}
		if n != nil {
			pos = Pos{n.Line, n.Column}
		}
		where := describe(e.InstanceLocation)
		var msg string
		switch k := e.ErrorKind.(type) {
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				kp := pos
				if n != nil {
					for i := 0; i+1 < len(n.Content); i += 2 {
						if n.Content[i].Value == p {
							kp = Pos{n.Content[i].Line, n.Content[i].Column}
						}
					}
				}
				m := fmt.Sprintf("unknown key %q in %s%s", p, where, knownKeys(e.InstanceLocation, nodes, ptr))
				if !seen[m] {
					seen[m] = true
					ps = append(ps, Problem{File: path, Pos: kp, Msg: m})
				}
			}
			return
		case *kind.Required:
			msg = fmt.Sprintf("%s is missing %s", where, quoteList(k.Missing))
		case *kind.Maximum:
			msg = fmt.Sprintf("%s: %s is over the maximum of %s%s", where, k.Got.RatString(), k.Want.RatString(), boundReason(e.InstanceLocation))
		default:
			msg = fmt.Sprintf("%s: %s", where, e.ErrorKind.LocalizedString(printer))
		}
		if !seen[msg] {
			seen[msg] = true
			ps = append(ps, Problem{File: path, Pos: pos, Msg: msg})
		}
	}
	walk(ve)
	return ps.sorted()
}

// oneOfCauses words the failure of a value that may take one of several
// shapes (onDelete: a word or {tombstone: field}) by the shape written:
// a mapping's own problems (causes, to walk), or one problem saying what
// the value may be (one), rather than every branch's failure. Both are
// nil for other failures.
func oneOfCauses(e *jsonschema.ValidationError, nodes map[string]*yaml.Node, path string, doc *yaml.Node) (causes []*jsonschema.ValidationError, one *Problem) {
	loc := e.InstanceLocation
	if _, ok := e.ErrorKind.(*kind.OneOf); !ok || len(loc) == 0 || loc[len(loc)-1] != "onDelete" {
		return nil, nil
	}
	n := nodes["/"+strings.Join(escapeAll(loc), "/")]
	if n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.MappingNode {
		for _, c := range e.Causes {
			if _, enum := c.ErrorKind.(*kind.Enum); !enum {
				causes = append(causes, c)
			}
		}
		if len(causes) > 0 {
			return causes, nil
		}
	}
	pos := Pos{doc.Line, doc.Column}
	if n != nil {
		pos = Pos{n.Line, n.Column}
	}
	return nil, &Problem{File: path, Pos: pos, Msg: describe(loc) + ": must be delete, ignore or {tombstone: <field>}"}
}

func knownKeys(loc []string, _ map[string]*yaml.Node, _ string) string {
	keys := keysAt(loc)
	if keys == "" {
		return ""
	}
	return " (known keys: " + keys + ")"
}

// keysAt lists the keys the schema allows at a location, for messages.
func keysAt(loc []string) string {
	last := func(i int) string {
		if len(loc) >= i {
			return loc[len(loc)-i]
		}
		return ""
	}
	switch {
	case len(loc) == 0:
		return "version, numeric, char, timestamp, collections, links"
	case len(loc) == 2 && loc[0] == "collections":
		return "name, table, id, filter, discriminator, idPrefix, onDelete, bucket, fields, lookups, rename, exclude, indexes, shardKey"
	case len(loc) == 2 && loc[0] == "links":
		return "table, sides"
	case len(loc) == 4 && loc[0] == "links" && loc[2] == "sides":
		return "collection, column, field"
	case len(loc) == 4 && loc[0] == "collections" && loc[2] == "indexes":
		return "keys, unique, partial, name"
	case last(1) == "bucket":
		return "by, size, orderBy, items, page, skipLast"
	case last(1) == "through":
		return "table, join"
	case last(1) == "embed":
		return "table, join, through, as, orderBy, limit, filter, fields, lookups, rename, exclude"
	case last(1) == "ids":
		return "table, join, through, column, orderBy, limit, filter"
	case last(1) == "aggregate":
		return "fn, table, join, through, column, filter"
	case last(2) == "lookups":
		return "name, table, join, through, orderBy, filter"
	case last(2) == "fields":
		return "name, column, key, embed, ids, aggregate, expr, sql, value, link, ref, numeric, char, timestamp"
	}
	return ""
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = strconv.Quote(x)
	}
	if len(q) == 1 {
		return "required key " + q[0]
	}
	return "required keys " + strings.Join(q, ", ")
}

func escapeAll(loc []string) []string {
	out := make([]string, len(loc))
	for i, s := range loc {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
	}
	return out
}

// describe names a location for humans: collections[0].fields[2].embed.
func describe(loc []string) string {
	if len(loc) == 0 {
		return "the mapping file"
	}
	var b strings.Builder
	for _, s := range loc {
		if _, err := strconv.Atoi(s); err == nil {
			b.WriteString("[" + s + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// posError is a problem found at a node while walking the YAML tree.
type posError struct {
	pos Pos
	msg string
}

func (e posError) Error() string { return e.msg }

// maxNodes bounds the nodes instanceOf expands, against alias bombs.
const maxNodes = 1 << 20

// instanceOf converts a YAML tree into the generic value the JSON Schema
// validator takes, recording the node behind every JSON pointer.
func instanceOf(n *yaml.Node, ptr string, nodes map[string]*yaml.Node) (any, error) {
	w := walker{nodes: nodes, open: map[*yaml.Node]bool{}}
	v, err := w.value(n, ptr)
	if err == nil && len(w.bad) > 0 {
		err = w.bad[0]
	}
	return v, err
}

type walker struct {
	nodes map[string]*yaml.Node
	// open are the alias targets being expanded: one met again is a cycle.
	open  map[*yaml.Node]bool
	count int
	// bad are the scalars that are no value (numbers out of range...),
	// each reported once; the walk goes on, taking their text.
	bad []posError
}

func (w *walker) value(n *yaml.Node, ptr string) (any, error) {
	w.count++
	if w.count > maxNodes {
		return nil, fmt.Errorf("the file expands to more than %d nodes (YAML aliases); write it out", maxNodes)
	}
	w.nodes[ptr] = n
	switch n.Kind {
	case yaml.AliasNode:
		if w.open[n.Alias] {
			return nil, posError{Pos{n.Line, n.Column}, fmt.Sprintf("alias *%s refers to a node that contains it: the mapping would nest without end (a cycle of embeddings)", n.Value)}
		}
		w.open[n.Alias] = true
		defer delete(w.open, n.Alias)
		return w.value(n.Alias, ptr)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, posError{Pos{k.Line, k.Column}, "mapping keys must be plain strings"}
			}
			p := ptr + "/" + strings.ReplaceAll(strings.ReplaceAll(k.Value, "~", "~0"), "/", "~1")
			if _, dup := m[k.Value]; dup {
				return nil, posError{Pos{k.Line, k.Column}, fmt.Sprintf("duplicate key %q", k.Value)}
			}
			v, err := w.value(n.Content[i+1], p)
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := w.value(c, ptr+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	case yaml.ScalarNode:
		v, err := scalarValue(n)
		if err != nil {
			e := posError{Pos{n.Line, n.Column}, describePointer(ptr) + ": " + err.Error()}
			// An alias repeats its target: one problem per scalar.
			if !slices.ContainsFunc(w.bad, func(b posError) bool { return b.pos == e.pos }) {
				w.bad = append(w.bad, e)
			}
			return n.Value, nil
		}
		return v, nil
	}
	return nil, fmt.Errorf("unsupported YAML node")
}
