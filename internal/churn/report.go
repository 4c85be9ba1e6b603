package churn

import (
	"fmt"
	"slices"
	"strings"
)

// Counts are the rows one table saw written.
type Counts struct {
	Inserted int // rows inserted
	Middle   int // of those, rows whose ordering columns fall strictly between two siblings'
	Updated  int // rows updated (every kind below included)
	Moved    int // updates that changed a foreign key: the row moved to another parent
	Renamed  int // updates of a lookup table's text column
	Rekeyed  int // updates of a primary key column
	Deleted  int // rows deleted (cascaded ones included)
	Cascaded int // rows deleted because a parent row was deleted with its children
	Parents  int // deletes of a row that had children (deleted first, in the same transaction)
	Truncate int // TRUNCATEs that emptied the table
	Failed   int // operations rolled back to their savepoint (a constraint said no)
}

func (c *Counts) add(o Counts) {
	c.Inserted += o.Inserted
	c.Middle += o.Middle
	c.Updated += o.Updated
	c.Moved += o.Moved
	c.Renamed += o.Renamed
	c.Rekeyed += o.Rekeyed
	c.Deleted += o.Deleted
	c.Cascaded += o.Cascaded
	c.Parents += o.Parents
	c.Truncate += o.Truncate
	c.Failed += o.Failed
}

// Report counts what rounds wrote, per table ("schema.table").
type Report struct {
	Tables       map[string]*Counts
	Transactions int
	Statements   int  // write statements that succeeded
	Sparse       bool // a sparse round (a few rows of a few tables)
}

func newReport() *Report { return &Report{Tables: map[string]*Counts{}} }

// Table returns the counts of a table ("t" means "public.t"); zero counts
// when it saw no writes.
func (r *Report) Table(name string) Counts {
	if !strings.Contains(name, ".") {
		name = "public." + name
	}
	if c := r.Tables[name]; c != nil {
		return *c
	}
	return Counts{}
}

func (r *Report) counts(table string) *Counts {
	c := r.Tables[table]
	if c == nil {
		c = &Counts{}
		r.Tables[table] = c
	}
	return c
}

// Add adds o's counts to r.
func (r *Report) Add(o *Report) {
	for t, c := range o.Tables {
		r.counts(t).add(*c)
	}
	r.Transactions += o.Transactions
	r.Statements += o.Statements
}

// String is a table of the counts, one line per table.
func (r *Report) String() string {
	names := make([]string, 0, len(r.Tables))
	for t := range r.Tables {
		names = append(names, t)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %6s %6s %6s %6s %6s %6s %6s %6s %6s %5s %6s\n", "TABLE", "INS", "MIDDLE", "UPD", "MOVED", "RENAME", "REKEY", "DEL", "CASC", "PARENT", "TRUNC", "FAILED")
	for _, n := range names {
		c := r.Tables[n]
		fmt.Fprintf(&b, "%-28s %6d %6d %6d %6d %6d %6d %6d %6d %6d %5d %6d\n", n, c.Inserted, c.Middle, c.Updated, c.Moved, c.Renamed, c.Rekeyed, c.Deleted, c.Cascaded, c.Parents, c.Truncate, c.Failed)
	}
	fmt.Fprintf(&b, "%d transactions, %d write statements", r.Transactions, r.Statements)
	return b.String()
}

// Statement is one write the generator made.
type Statement struct {
	SQL  string
	Args []*string
	Err  string // the error when it was rolled back
}

// String renders the statement with its arguments inlined as literals.
func (s Statement) String() string {
	out := s.SQL
	for i := len(s.Args); i >= 1; i-- {
		lit := "NULL"
		if a := s.Args[i-1]; a != nil {
			lit = "'" + strings.ReplaceAll(*a, "'", "''") + "'"
		}
		out = strings.ReplaceAll(out, fmt.Sprintf("$%d", i), lit)
	}
	if s.Err != "" {
		out += "  -- rolled back: " + s.Err
	}
	return out
}
