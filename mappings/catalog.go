package mappings

import "strings"

// Catalog is what the source database says about the tables a mapping uses.
// extract fills it from pg_catalog; Resolve checks a mapping against it.
type Catalog struct {
	// Tables by qualified name "schema.table".
	Tables map[string]*Table `json:"tables"`
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
	// Partitioned is set on a partitioned table (its rows are all in its
	// partitions).
	Partitioned bool `json:"partitioned,omitempty"`
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
	// RefTable is the referenced table's qualified name "schema.table".
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

// Table returns the table named name ("t" means "public.t"), or nil.
func (c *Catalog) Table(name string) *Table {
	if c == nil {
		return nil
	}
	return c.Tables[QualifiedName(name)]
}

// QualifiedName adds the default schema "public" to an unqualified name.
func QualifiedName(name string) string {
	if strings.Contains(name, ".") {
		return name
	}
	return "public." + name
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
