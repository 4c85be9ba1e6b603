package mappings

// Coverage: how many rows of each table a mapping reads end up in at
// least one document. extract computes it in PostgreSQL (extract.Coverage);
// plan, verify, migrate --fail-on-uncovered and advise read it.

// TableCoverage is one table's coverage: of its Rows (what SELECT ... FROM
// the table returns, inheritance children included), Reached are held by
// at least one document of any collection of the mapping (as a document,
// an embedded document, a lookup's values, an id, an aggregate's input, a
// bucket item, or a join-table row linking the two), Unreached by none.
type TableCoverage struct {
	// Table is the qualified name, "public.country".
	Table     string `json:"table"`
	Rows      int64  `json:"rows"`
	Reached   int64  `json:"reached"`
	Unreached int64  `json:"unreached"`
	// ReadBy lists the plan's nodes reading the table ("cities",
	// "cities.countries", "books.authors (join table)"), in walk order.
	ReadBy []string `json:"readBy"`
	// Reasons groups the unreached rows by why they reach no document,
	// most rows first.
	Reasons []Uncovered `json:"reasons,omitempty"`
}

// Uncovered is a group of rows of a table that reach no document, for one
// reason.
type Uncovered struct {
	// Reason is one of the Reason* codes.
	Reason string `json:"reason"`
	// Node is the path of the node the reason is told for: the first node
	// reading the table (a row unreached by every node has a reason for
	// each; the first is told).
	Node string `json:"node"`
	Rows int64  `json:"rows"`
	// Message says it in words, naming the columns, filter or limit.
	Message string `json:"message"`
	// Samples name a few of the rows (at most CoverageSamples), in key
	// order: "(code)=(ATA)", or all the columns of a table without a
	// primary key.
	Samples []string `json:"samples"`
	// Child is the inheritance child holding the rows (ReasonInherited).
	Child string `json:"child,omitempty"`
}

// CoverageSamples is the number of sample rows kept per reason.
const CoverageSamples = 5

// Why rows reach no document (Uncovered.Reason).
const (
	// ReasonInherited: the row is stored in an inheritance child of the
	// table, and denorm reads ONLY the named table.
	ReasonInherited = "inheritance-child"
	// ReasonFiltered: the node's filter: leaves the row out.
	ReasonFiltered = "filtered"
	// ReasonNullKey: a join column of the row is NULL, so it joins no
	// parent (a bucket's by column: migrate rejects the row).
	ReasonNullKey = "null-key"
	// ReasonNullID: the row's id (the value of an id array) is NULL, and
	// id arrays leave NULL ids out.
	ReasonNullID = "null-id"
	// ReasonNoParent: no row of the parent table has the row's join key.
	ReasonNoParent = "no-parent"
	// ReasonParentUnreached: parent rows with the join key exist, but
	// reach no document themselves.
	ReasonParentUnreached = "parent-unreached"
	// ReasonBeyondLimit: every parent keeps its first limit rows (a
	// subset, or the first row of a lookup or object embed), and this row
	// is not among them for any parent.
	ReasonBeyondLimit = "beyond-limit"
	// ReasonHeldBack: a bucket's skipLast holds the row back for the
	// parent's own subset, which does not hold it.
	ReasonHeldBack = "held-back"
	// ReasonNotLinked: a relation reached through a join table: no row of
	// the join table links the row.
	ReasonNotLinked = "not-linked"
	// ReasonNoRelated: a join table row whose other side matches no row.
	ReasonNoRelated = "no-related-row"
	// ReasonFilteredOrLimit: a relation reached through a join table with
	// a limit: linked to reached parents, but the filter or the limit
	// leaves it out.
	ReasonFilteredOrLimit = "filtered-or-beyond-limit"
	// ReasonOther: none of the above (a root row whose _id columns are
	// NULL, say).
	ReasonOther = "other"
)

// UncoveredRows totals the rows of every table that reach no document.
func UncoveredRows(cov []TableCoverage) (rows int64, tables int) {
	for _, c := range cov {
		if c.Unreached > 0 {
			rows += c.Unreached
			tables++
		}
	}
	return rows, tables
}
