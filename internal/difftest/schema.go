package difftest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Table is one generated table with its rows.
type Table struct {
	Schema string // "" or "public": the default schema
	Name   string
	Cols   []*Column
	PK     []string   // primary key columns; nil: none
	Unique [][]string // unique constraints (columns NOT NULL)
	FKs    []*FK
	// Rows hold one SQL literal (or NULL) per insertable column
	// (Insertable), in that order.
	Rows [][]string
	// Parent makes the table a child of another by INHERITS (its columns
	// first); Partitioned makes it a table partitioned by hash of its
	// first key column, with two partitions.
	Parent      *Table
	Partitioned bool
	// RLS enables row-level security with a policy hiding some rows from
	// every role but the owner and superusers.
	RLS       string
	Join      bool // a join table (two foreign keys, no entity of its own)
	keyOrd    []int
	keyParent map[string]int // FK column -> index of FK
}

// Column is one column.
type Column struct {
	Name      string
	T         *colType
	NotNull   bool
	Generated string // GENERATED ALWAYS AS (...) STORED
}

// FK is a foreign key (Enforced: declared as a constraint; otherwise the
// column just holds the parent's key values, orphans included).
type FK struct {
	Cols     []string
	Ref      *Table
	RefCols  []string
	Enforced bool
	Unique   bool // one child per parent at most
}

// Qualified is the table's name as SQL spells it.
func (t *Table) Qualified() string {
	if t.Schema == "" {
		return ident(t.Name)
	}
	return ident(t.Schema) + "." + ident(t.Name)
}

// From is the table as a query reads it the way denorm does: its own
// rows only (ONLY: an inheritance parent without its children's rows), a
// partitioned table with all its partitions' rows.
func (t *Table) From() string {
	if t.Partitioned {
		return t.Qualified()
	}
	return "ONLY " + t.Qualified()
}

// MappingName is the table's name as a mapping file names it: as a psql
// user writes it, each part double-quoted unless it is a plain lower-case
// identifier (mappings/README.md, "Table names").
func (t *Table) MappingName() string {
	if t.Schema == "" {
		return sqlIdent(t.Name)
	}
	return sqlIdent(t.Schema) + "." + sqlIdent(t.Name)
}

var plainIdent = regexp.MustCompile(`^[a-z_\x{80}-\x{10FFFF}][a-z0-9_$\x{80}-\x{10FFFF}]*$`)

// reservedWords are the names the generator draws that SQL reserves.
var reservedWords = map[string]bool{"select": true, "user": true, "order": true, "table": true}

// sqlIdent is name as SQL writes it: bare when PostgreSQL reads it back
// unchanged, double-quoted otherwise.
func sqlIdent(name string) string {
	if plainIdent.MatchString(name) && !reservedWords[name] {
		return name
	}
	return ident(name)
}

func (t *Table) col(name string) *Column {
	for _, c := range t.Cols {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Insertable are the columns an INSERT names (not the generated ones).
func (t *Table) Insertable() []*Column {
	var out []*Column
	for _, c := range t.Cols {
		if c.Generated == "" {
			out = append(out, c)
		}
	}
	return out
}

// IDCols are the columns that identify a row: the primary key, else a
// unique constraint's columns (nil when neither).
func (t *Table) IDCols() []string {
	if len(t.PK) > 0 {
		return t.PK
	}
	if len(t.Unique) > 0 {
		return t.Unique[0]
	}
	return nil
}

// isUnique says whether cols (in any order) are the primary key or a
// unique constraint.
func (t *Table) isUnique(cols []string) bool {
	same := func(a []string) bool {
		if len(a) != len(cols) {
			return false
		}
		for _, c := range a {
			if !slices.Contains(cols, c) {
				return false
			}
		}
		return true
	}
	if len(t.PK) > 0 && same(t.PK) {
		return true
	}
	for _, u := range t.Unique {
		if same(u) {
			return true
		}
	}
	for _, fk := range t.FKs {
		if fk.Unique && same(fk.Cols) {
			return true
		}
	}
	return false
}

// SchemaSQL is the DDL of the case: extensions, schemas, types, tables,
// constraints, policies.
func (c *Case) SchemaSQL() string {
	var b strings.Builder
	for _, s := range c.Types {
		b.WriteString(s + "\n")
	}
	for _, t := range c.Tables {
		b.WriteString(t.createSQL() + "\n")
	}
	for _, t := range c.Tables {
		for i, fk := range t.FKs {
			if !fk.Enforced || !slices.Contains(c.Tables, fk.Ref) {
				continue
			}
			var cols, refs []string
			for _, x := range fk.Cols {
				cols = append(cols, ident(x))
			}
			for _, x := range fk.RefCols {
				refs = append(refs, ident(x))
			}
			fmt.Fprintf(&b, "ALTER TABLE %s ADD CONSTRAINT %s FOREIGN KEY (%s) REFERENCES %s (%s);\n",
				t.Qualified(), ident(fmt.Sprintf("fk%d_%s", i, t.Name)), strings.Join(cols, ", "), fk.Ref.Qualified(), strings.Join(refs, ", "))
		}
		if t.RLS != "" {
			fmt.Fprintf(&b, "ALTER TABLE %s ENABLE ROW LEVEL SECURITY;\nCREATE POLICY %s ON %s USING (%s);\n",
				t.Qualified(), ident("p_"+t.Name), t.Qualified(), t.RLS)
		}
	}
	return b.String()
}

func (t *Table) createSQL() string {
	var defs []string
	own := t.Cols
	if t.Parent != nil {
		own = t.Cols[len(t.Parent.Cols):]
	}
	for _, c := range own {
		d := ident(c.Name) + " " + c.T.SQL
		if c.Generated != "" {
			d += " GENERATED ALWAYS AS (" + c.Generated + ") STORED"
		}
		if c.NotNull {
			d += " NOT NULL"
		}
		defs = append(defs, d)
	}
	if len(t.PK) > 0 {
		defs = append(defs, "PRIMARY KEY ("+identList(t.PK)+")")
	}
	for _, u := range t.Unique {
		defs = append(defs, "UNIQUE ("+identList(u)+")")
	}
	for _, fk := range t.FKs {
		if fk.Unique {
			defs = append(defs, "UNIQUE ("+identList(fk.Cols)+")")
		}
	}
	s := fmt.Sprintf("CREATE TABLE %s (\n  %s\n)", t.Qualified(), strings.Join(defs, ",\n  "))
	if t.Parent != nil {
		s += " INHERITS (" + t.Parent.Qualified() + ")"
	}
	if t.Partitioned {
		s += " PARTITION BY HASH (" + ident(t.PK[0]) + ");\n"
		for i := 0; i < 2; i++ {
			s += fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES WITH (MODULUS 2, REMAINDER %d)", partName(t, i), t.Qualified(), i)
			if i == 0 {
				s += ";\n"
			}
		}
	}
	return s + ";"
}

func partName(t *Table, i int) string {
	n := fmt.Sprintf("%s_p%d", t.Name, i)
	if t.Schema == "" {
		return ident(n)
	}
	return ident(t.Schema) + "." + ident(n)
}

func identList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = ident(c)
	}
	return strings.Join(q, ", ")
}

// DataSQL inserts every table's rows, parents first.
func (c *Case) DataSQL() string {
	var b strings.Builder
	for _, t := range c.Tables {
		if len(t.Rows) == 0 {
			continue
		}
		cols := t.Insertable()
		if len(cols) == 0 {
			for range t.Rows {
				fmt.Fprintf(&b, "INSERT INTO %s DEFAULT VALUES;\n", t.Qualified())
			}
			continue
		}
		names := make([]string, len(cols))
		for i, col := range cols {
			names[i] = ident(col.Name)
		}
		for start := 0; start < len(t.Rows); start += 100 {
			end := min(start+100, len(t.Rows))
			fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES\n", t.Qualified(), strings.Join(names, ", "))
			for i, r := range t.Rows[start:end] {
				sep := ",\n"
				if start+i == end-1 {
					sep = ";\n"
				}
				b.WriteString("  (" + strings.Join(r, ", ") + ")" + sep)
			}
		}
	}
	b.WriteString("ANALYZE;\n")
	return b.String()
}
