package mappings

// Catalog is what the source database says about the tables a mapping uses.
// extract fills it from pg_catalog; Resolve checks a mapping against it.
type Catalog struct {
	// Tables by qualified name (QualifiedTableName: "schema.table", each
	// part quoted when it needs to be).
	Tables map[string]*Table `json:"tables"`
	// Names says, for each table name a mapping writes (as written), what
	// it resolves to for the connected role (see tablename.go). A name
	// absent from Names is read as written, "public" being the schema of
	// an unqualified one (catalogs built by hand, in tests).
	Names map[string]Resolved `json:"names,omitempty"`
	// SearchPath lists the schemas an unqualified name was searched in,
	// in order (the role's search_path as PostgreSQL applies it).
	SearchPath []string `json:"searchPath,omitempty"`
	// Role is the role the catalog was read as (current_user).
	Role string `json:"-"`
}

// Resolved is what a table name of the mapping resolves to.
type Resolved struct {
	// Table is the key in Catalog.Tables; empty when the name does not
	// resolve to a table denorm can read.
	Table string `json:"table,omitempty"`
	// Problem says why it does not, in words for the user.
	Problem string `json:"problem,omitempty"`
	// Shadowed lists the tables of the same name in schemas later on the
	// search_path, which an unqualified name does not reach.
	Shadowed []string `json:"shadowed,omitempty"`
}

// Table describes one source table.
type Table struct {
	Schema  string   `json:"schema"`
	Name    string   `json:"name"`
	Columns []Column `json:"columns"`
	// PrimaryKey lists the primary key columns in key order; empty when the
	// table has none.
	PrimaryKey []string `json:"primaryKey,omitempty"`
	// Unique lists the column sets of unique constraints and unique indexes
	// whose columns are all NOT NULL (usable as document keys).
	Unique [][]string `json:"unique,omitempty"`
	// ForeignKeys lists the table's foreign key constraints.
	ForeignKeys []ForeignKey `json:"foreignKeys,omitempty"`
	// Estimate is the planner's row estimate (pg_class.reltuples); -1 when unknown.
	Estimate int64 `json:"estimate,omitempty"`
	// Kind is empty for a table (plain or partitioned), else KindView,
	// KindMaterializedView or KindForeignTable: relations that have no
	// primary key, whose id columns the mapping names.
	Kind string `json:"kind,omitempty"`
	// Partitioned: a partitioned table, read whole (the rows of all its
	// partitions).
	Partitioned bool `json:"partitioned,omitempty"`
	// Children are the tables that inherit from this one (INHERITS, not
	// partitions), at any depth. denorm reads only the table's own rows
	// (SELECT ... FROM ONLY), never theirs: see OwnRowsOnly.
	Children []ChildTable `json:"children,omitempty"`
	// RowSecurity is set when row-level security applies to the connected
	// role on this table: PostgreSQL would show it only the rows its
	// policies allow.
	RowSecurity *RowSecurity `json:"rowSecurity,omitempty"`
}

// OwnRowsOnly reports whether the table is read as ONLY table: a plain
// or foreign table, which inheritance children may extend with rows of
// their own that denorm does not read (a partitioned table is read whole).
func (t *Table) OwnRowsOnly() bool {
	return (t.Kind == "" || t.Kind == KindForeignTable) && !t.Partitioned
}

// ChildTable is a table inheriting from another (Table.Children).
type ChildTable struct {
	// Name is the child's qualified name (QualifiedTableName).
	Name string `json:"name"`
	// Estimate is the planner's row estimate; -1 when unknown.
	Estimate int64 `json:"estimate"`
}

// RowSecurity describes the row-level security that applies to the
// connected role on a table: the table has it enabled, and the role is
// neither a superuser, nor BYPASSRLS, nor the table's owner (unless the
// table forces it on its owner too).
type RowSecurity struct {
	// Policies lists the policies that let the role read rows, each as
	// "name (USING condition)"; empty when none does (the role then sees
	// no row at all).
	Policies []string `json:"policies,omitempty"`
}

// Relation kinds other than tables (Table.Kind).
const (
	KindView             = "view"
	KindMaterializedView = "materialized view"
	KindForeignTable     = "foreign table"
)

// TableActivity is a table's size and activity since its statistics were
// last reset (PostgreSQL's pg_stat_user_tables: the live row count, or the
// planner's estimate when there is none, and the rows inserted, updated
// and deleted). extract reads it; plan's warnings and advise weigh it.
type TableActivity struct {
	Rows, Inserts, Updates, Deletes int64
}

// ForeignKey is one foreign key constraint.
type ForeignKey struct {
	Columns []string `json:"columns"`
	// RefTable is the referenced table's qualified name (QualifiedTableName).
	RefTable   string   `json:"refTable"`
	RefColumns []string `json:"refColumns"`
}

// Column describes one column.
type Column struct {
	Name string `json:"name"`
	// Type is the SQL type as format_type prints it: "integer", "numeric(12,2)",
	// "text[]", "timestamp with time zone", or a user type's name.
	Type string `json:"type"`
	// TypeName is pg_type.typname: "int4", "numeric", "_text", "mood".
	TypeName string `json:"typeName"`
	// Category is pg_type.typcategory: "N" numeric, "S" string, "B" boolean,
	// "D" date/time, "U" user (uuid, json, bytea), "A" array, "E" enum, ...
	Category string `json:"category"`
	// ElemTypeName is the element's typname for arrays ("int4" for "_int4").
	ElemTypeName string `json:"elemTypeName,omitempty"`
	// ElemCategory is the element's typcategory for arrays.
	ElemCategory string `json:"elemCategory,omitempty"`
	NotNull      bool   `json:"notNull,omitempty"`
	// Domain is the column's declared type when it is a domain (or an
	// array of one): Type, TypeName and Category then describe the base
	// type, which is how values are read and compared.
	Domain string `json:"domain,omitempty"`
	// Collation is the column's collation when it is not the database's
	// default; NonDeterministic says that it considers strings equal that
	// differ in bytes (which no join key of denorm's can follow).
	Collation        string `json:"collation,omitempty"`
	NonDeterministic bool   `json:"nonDeterministic,omitempty"`
	// Canon, set only on columns Resolve adds to a plan's nodes, makes the
	// column a join key computed by PostgreSQL: the value of column Name
	// as the comparison type Canon sees it, in a text form that is equal
	// byte for byte exactly when PostgreSQL's = says the values are equal
	// (see joinkey.go). It is never a document field.
	Canon string `json:"canon,omitempty"`
	// SQL, set only on columns Resolve adds to a plan's nodes, makes the
	// column computed by PostgreSQL: a field's sql: expression over the
	// row's own columns; Name is the field's name. Its type is known only
	// when the query runs.
	SQL string `json:"sql,omitempty"`
	// KeepPadding keeps the blank padding of char(n) values (the mapping's
	// char: keep); by default it is trimmed. Resolve sets it on the
	// columns of a plan's nodes.
	KeepPadding bool `json:"keepPadding,omitempty"`
	// TimestampText writes the column's timestamp and timestamptz values
	// (and arrays of them) into documents as ISO 8601 text with
	// microseconds (the mapping's timestamp: string) rather than as BSON
	// dates, which hold milliseconds. Resolve sets it on the columns of a
	// plan's nodes; rows keep the values as times (keys, positions and
	// expressions see times), transform converts them as it writes them
	// (transform.TimestampText).
	TimestampText bool `json:"timestampText,omitempty"`
}

// Table returns the table a mapping's table name (as written) resolves
// to, or nil.
func (c *Catalog) Table(name string) *Table {
	if c == nil {
		return nil
	}
	if r, ok := c.Names[name]; ok {
		return c.Tables[r.Table]
	}
	n, err := ParseTableName(name)
	if err != nil {
		return nil
	}
	return c.Tables[n.Qualified("public")]
}

// Column returns the column named name, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// NumericMode says how PostgreSQL NUMERIC values are written.
type NumericMode string

const (
	// NumericDecimal writes BSON Decimal128 (exact; the default).
	NumericDecimal NumericMode = "decimal"
	// NumericDouble writes BSON double (may round).
	NumericDouble NumericMode = "double"
	// NumericString writes the exact decimal text as a string.
	NumericString NumericMode = "string"
)

// TimestampMode says how timestamp and timestamptz values are written.
type TimestampMode string

const (
	// TimestampDate writes BSON dates: milliseconds, the digits below
	// dropped toward the past (the default).
	TimestampDate TimestampMode = "date"
	// TimestampString writes ISO 8601 text in UTC with six fractional
	// digits: 2024-01-01T10:00:00.123456Z.
	TimestampString TimestampMode = "string"
)

// CharMode says what happens to the blank padding of char(n) values.
type CharMode string

const (
	// CharTrim removes trailing blanks, as PostgreSQL does when it casts
	// char(n) to text (the default).
	CharTrim CharMode = "trim"
	// CharKeep writes the value with its padding, as stored.
	CharKeep CharMode = "keep"
)
