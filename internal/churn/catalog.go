package churn

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The generator's own view of the test database's catalog: everything it
// needs to write valid rows (types, keys, foreign keys, unique and check
// constraints, defaults, identity and generated columns, partitions and
// their bounds). It deliberately does not reuse extract's catalog code: a
// test tool that shares the code under test shares its bugs.

// kind is how the generator makes values of a column's (base) type.
type kind int

const (
	kOther kind = iota // no generator: copy an existing value, use the default or NULL
	kInt
	kNumeric
	kFloat
	kText
	kBool
	kDate
	kTimestamp
	kTimestamptz
	kTime
	kInterval
	kUUID
	kBytea
	kJSON
	kTSVector
	kEnum
	kArray
)

// orderable kinds have values strictly between two others.
func (k kind) orderable() bool {
	switch k {
	case kInt, kNumeric, kFloat, kDate, kTimestamp, kTimestamptz:
		return true
	}
	return false
}

// column is one column of a table.
type column struct {
	name  string
	ident string // quoted
	typ   string // format_type: the cast target, e.g. "numeric(4,2)", "year", "text[]"
	kind  kind
	bits  int // integer width
	// prec and scale of numeric(p,s) (prec 0: unconstrained); maxLen of
	// character types (0: unlimited).
	prec, scale, maxLen int
	labels              []string // enum labels
	elem                *column  // array element
	notNull             bool
	hasDefault          bool
	serial              bool // default nextval(...) or identity: the database makes the value
	identityAlways      bool // GENERATED ALWAYS AS IDENTITY: cannot be written
	generated           bool // GENERATED ALWAYS AS (...) STORED: cannot be written
	volatileDefault     bool // default now() or similar: never derive values from it
	domain              bool // a domain type (its checks are unknown: prefer existing values)
	checked             bool // named by a CHECK constraint of the table
	unique              bool // alone a unique key
	pk, fk              bool
	partKey             bool
}

// fkey is one foreign key, from child columns to parent columns.
type fkey struct {
	child, parent *table
	cols, refs    []*column
}

// bound is one partition's bound: a range [from, to) (either end "" for
// MINVALUE / MAXVALUE), a list of values, or anything (default, hash).
type bound struct {
	from, to string
	list     []string
	any      bool
}

// table is one ordinary or partitioned table (partitions are reached
// through their parent).
type table struct {
	oid         uint32
	name        string // schema.table
	ident       string // quoted
	partitioned bool
	rows        int64 // estimate
	cols        []*column
	pk          []*column
	uniques     [][]*column
	fks         []*fkey // to parents
	refs        []*fkey // from children
	partKey     *column
	bounds      []bound
}

func (t *table) column(name string) *column {
	for _, c := range t.cols {
		if c.name == name {
			return c
		}
	}
	return nil
}

// lookup tells whether t is a small table other tables point to.
func (t *table) lookup(maxRows int64) bool {
	return len(t.refs) > 0 && t.rows <= maxRows && slices.ContainsFunc(t.cols, func(c *column) bool { return c.kind == kText && !c.fk })
}

type catalog struct {
	tables []*table // by name
	byOID  map[uint32]*table
}

func (c *catalog) table(name string) *table {
	if !strings.Contains(name, ".") {
		name = "public." + name
	}
	for _, t := range c.tables {
		if t.name == name {
			return t
		}
	}
	return nil
}

// readCatalog reads every ordinary and partitioned table outside the
// system schemas.
func readCatalog(ctx context.Context, conn *pgx.Conn) (*catalog, error) {
	cat := &catalog{byOID: map[uint32]*table{}}
	rows, err := conn.Query(ctx, `
SELECT c.oid, n.nspname, c.relname, c.relkind = 'p',
       CASE WHEN c.relkind = 'p' THEN coalesce((SELECT sum(greatest(p.reltuples, 0)) FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid WHERE i.inhparent = c.oid), 0)
            ELSE greatest(c.reltuples, 0) END::int8
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp)'
ORDER BY n.nspname, c.relname`)
	if err != nil {
		return nil, fmt.Errorf("read tables: %w", err)
	}
	for rows.Next() {
		t := &table{}
		var schema, rel string
		if err := rows.Scan(&t.oid, &schema, &rel, &t.partitioned, &t.rows); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read tables: %w", err)
		}
		t.name = schema + "." + rel
		t.ident = pgx.Identifier{schema, rel}.Sanitize()
		cat.tables = append(cat.tables, t)
		cat.byOID[t.oid] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tables: %w", err)
	}
	oids := make([]uint32, len(cat.tables))
	for i, t := range cat.tables {
		oids[i] = t.oid
	}
	for _, step := range []func(context.Context, *pgx.Conn, []uint32) error{cat.readColumns, cat.readIndexes, cat.readConstraints, cat.readPartitions} {
		if err := step(ctx, conn, oids); err != nil {
			return nil, err
		}
	}
	// Constraints came in OID order, which differs between two loads of
	// the same data: order them by name so that a seed replays.
	fkOrder := func(a, b *fkey) int {
		return strings.Compare(a.child.name+"\x00"+a.parent.name+"\x00"+names(a.cols), b.child.name+"\x00"+b.parent.name+"\x00"+names(b.cols))
	}
	for _, t := range cat.tables {
		slices.SortFunc(t.fks, fkOrder)
		slices.SortFunc(t.refs, fkOrder)
	}
	// Small tables (lookups) may never have been analyzed: count them.
	for _, t := range cat.tables {
		if t.rows < 1000 {
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM (SELECT 1 FROM "+t.ident+" LIMIT 1000) s").Scan(&t.rows); err != nil {
				return nil, fmt.Errorf("count %s: %w", t.name, err)
			}
		}
	}
	return cat, nil
}

func (cat *catalog) readColumns(ctx context.Context, conn *pgx.Conn, oids []uint32) error {
	rows, err := conn.Query(ctx, `
SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod),
       t.typtype = 'd', bt.typname, bt.typtype::text, bt.typcategory::text,
       CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END,
       coalesce(et.typname, ''), coalesce(et.typtype::text, ''), coalesce(et.typcategory::text, ''),
       a.attnotnull, a.atthasdef, coalesce(pg_get_expr(d.adbin, d.adrelid), ''),
       a.attidentity::text, a.attgenerated::text,
       coalesce((SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e
                 WHERE e.enumtypid = CASE WHEN bt.typcategory = 'A' THEN et.oid ELSE bt.oid END), '{}')
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
JOIN pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
LEFT JOIN pg_type et ON et.oid = bt.typelem AND bt.typcategory = 'A'
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid = ANY($1) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum`, oids)
	if err != nil {
		return fmt.Errorf("read columns: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			oid                                       uint32
			c                                         column
			base, baseType, baseCat                   string
			typmod                                    int32
			elem, elemType, elemCat, def, ident, gend string
			labels                                    []string
		)
		if err := rows.Scan(&oid, &c.name, &c.typ, &c.domain, &base, &baseType, &baseCat, &typmod,
			&elem, &elemType, &elemCat, &c.notNull, &c.hasDefault, &def, &ident, &gend, &labels); err != nil {
			return fmt.Errorf("read columns: %w", err)
		}
		c.ident = pgx.Identifier{c.name}.Sanitize()
		c.identityAlways = ident == "a"
		c.serial = ident != "" || strings.HasPrefix(def, "nextval(")
		c.generated = gend != ""
		c.volatileDefault = volatileDefault.MatchString(def)
		if baseCat == "A" {
			c.kind = kArray
			e := &column{typ: strings.TrimSuffix(c.typ, "[]")}
			setKind(e, elem, elemType, typmod, labels)
			c.elem = e
		} else {
			setKind(&c, base, baseType, typmod, labels)
		}
		if t := cat.byOID[oid]; t != nil {
			t.cols = append(t.cols, &c)
		}
	}
	return rows.Err()
}

var volatileDefault = regexp.MustCompile(`(?i)now\(\)|current_(timestamp|date|time)|localtimestamp|clock_timestamp|statement_timestamp|transaction_timestamp|random\(|gen_random_uuid`)

// setKind fills the kind of a column of base type typname (typtype "e"
// for enums) and its type modifier's limits.
func setKind(c *column, typname, typtype string, typmod int32, labels []string) {
	switch {
	case typtype == "e":
		c.kind, c.labels = kEnum, labels
		return
	}
	switch typname {
	case "int2":
		c.kind, c.bits = kInt, 16
	case "int4":
		c.kind, c.bits = kInt, 32
	case "int8":
		c.kind, c.bits = kInt, 64
	case "numeric":
		c.kind = kNumeric
		if typmod >= 4 {
			c.prec, c.scale = int((typmod-4)>>16)&0xffff, int(typmod-4)&0xffff
		}
	case "float4", "float8":
		c.kind = kFloat
	case "text", "varchar", "bpchar", "name", "citext":
		c.kind = kText
		if typmod >= 4 && typname != "name" {
			c.maxLen = int(typmod - 4)
		}
	case "bool":
		c.kind = kBool
	case "date":
		c.kind = kDate
	case "timestamp":
		c.kind = kTimestamp
	case "timestamptz":
		c.kind = kTimestamptz
	case "time":
		c.kind = kTime
	case "interval":
		c.kind = kInterval
	case "uuid":
		c.kind = kUUID
	case "bytea":
		c.kind = kBytea
	case "json", "jsonb":
		c.kind = kJSON
	case "tsvector":
		c.kind = kTSVector
	default:
		c.kind = kOther
	}
}

// readIndexes reads primary keys and unique indexes on plain columns.
func (cat *catalog) readIndexes(ctx context.Context, conn *pgx.Conn, oids []uint32) error {
	rows, err := conn.Query(ctx, `
SELECT i.indrelid, i.indisprimary,
       array(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY k(attnum, ord)
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.ord)
FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
WHERE i.indrelid = ANY($1) AND i.indisunique AND i.indexprs IS NULL AND i.indpred IS NULL
  AND NOT (0 = ANY(i.indkey))
ORDER BY i.indrelid, NOT i.indisprimary, ic.relname`, oids)
	if err != nil {
		return fmt.Errorf("read indexes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			oid     uint32
			primary bool
			names   []string
		)
		if err := rows.Scan(&oid, &primary, &names); err != nil {
			return fmt.Errorf("read indexes: %w", err)
		}
		t := cat.byOID[oid]
		if t == nil {
			continue
		}
		cols := t.columns(names)
		if cols == nil {
			continue
		}
		if primary {
			t.pk = cols
			for _, c := range cols {
				c.pk = true
			}
		}
		t.uniques = append(t.uniques, cols)
		if len(cols) == 1 {
			cols[0].unique = true
		}
	}
	return rows.Err()
}

func names(cols []*column) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return strings.Join(out, ",")
}

func (t *table) columns(names []string) []*column {
	out := make([]*column, len(names))
	for i, n := range names {
		if out[i] = t.column(n); out[i] == nil {
			return nil
		}
	}
	return out
}

// readConstraints reads foreign keys (declared on a table, on its
// partitions, or pointing at partitions: all are attributed to the
// partition roots) and the columns CHECK constraints name.
func (cat *catalog) readConstraints(ctx context.Context, conn *pgx.Conn, _ []uint32) error {
	rows, err := conn.Query(ctx, `
SELECT DISTINCT c.contype::text,
       coalesce(pg_partition_root(c.conrelid), c.conrelid)::oid,
       coalesce(pg_partition_root(nullif(c.confrelid, 0)), c.confrelid)::oid,
       array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY k(n, o)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o),
       array(SELECT a.attname FROM unnest(coalesce(c.confkey, '{}')) WITH ORDINALITY k(n, o)
             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o)
FROM pg_constraint c
WHERE c.contype IN ('f', 'c') AND c.conrelid <> 0
ORDER BY 1, 2, 3, 4, 5`)
	if err != nil {
		return fmt.Errorf("read constraints: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			typ              string
			child, parent    uint32
			cols, parentCols []string
		)
		if err := rows.Scan(&typ, &child, &parent, &cols, &parentCols); err != nil {
			return fmt.Errorf("read constraints: %w", err)
		}
		ct := cat.byOID[child]
		if ct == nil {
			continue
		}
		if typ == "c" {
			for _, n := range cols {
				if c := ct.column(n); c != nil {
					c.checked = true
				}
			}
			continue
		}
		pt := cat.byOID[parent]
		if pt == nil {
			continue
		}
		fk := &fkey{child: ct, parent: pt, cols: ct.columns(cols), refs: pt.columns(parentCols)}
		if fk.cols == nil || fk.refs == nil {
			continue
		}
		for _, c := range fk.cols {
			c.fk = true
		}
		ct.fks = append(ct.fks, fk)
		pt.refs = append(pt.refs, fk)
	}
	return rows.Err()
}

var (
	rangeBound = regexp.MustCompile(`^FOR VALUES FROM \((.*)\) TO \((.*)\)$`)
	listBound  = regexp.MustCompile(`^FOR VALUES IN \((.*)\)$`)
)

// readPartitions reads the partition key (a single plain column) and the
// bounds of every partition of each partitioned table.
func (cat *catalog) readPartitions(ctx context.Context, conn *pgx.Conn, oids []uint32) error {
	rows, err := conn.Query(ctx, `
SELECT p.partrelid, coalesce(a.attname, ''),
       coalesce((SELECT array_agg(pg_get_expr(c.relpartbound, c.oid) ORDER BY c.relname)
                 FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = p.partrelid), '{}')
FROM pg_partitioned_table p
LEFT JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0] AND p.partnatts = 1
WHERE p.partrelid = ANY($1)`, oids)
	if err != nil {
		return fmt.Errorf("read partitions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			oid    uint32
			key    string
			bounds []string
		)
		if err := rows.Scan(&oid, &key, &bounds); err != nil {
			return fmt.Errorf("read partitions: %w", err)
		}
		t := cat.byOID[oid]
		if t == nil || key == "" {
			continue
		}
		t.partKey = t.column(key)
		t.partKey.partKey = true
		for _, b := range bounds {
			t.bounds = append(t.bounds, parseBound(b))
		}
	}
	return rows.Err()
}

// parseBound reads pg_get_expr's text of a partition bound.
func parseBound(s string) bound {
	if m := rangeBound.FindStringSubmatch(s); m != nil {
		from, to := literals(m[1]), literals(m[2])
		if len(from) != 1 || len(to) != 1 {
			return bound{any: true}
		}
		return bound{from: from[0], to: to[0]}
	}
	if m := listBound.FindStringSubmatch(s); m != nil {
		return bound{list: literals(m[1])}
	}
	return bound{any: true} // DEFAULT, hash partitions
}

// literals splits "'a', 'b”c', 10, MINVALUE" into its values; MINVALUE,
// MAXVALUE and NULL become "".
func literals(s string) []string {
	var out []string
	for s = strings.TrimSpace(s); s != ""; {
		var v string
		if s[0] == '\'' {
			i := 1
			var b strings.Builder
			for i < len(s) {
				if s[i] == '\'' {
					if i+1 < len(s) && s[i+1] == '\'' {
						b.WriteByte('\'')
						i += 2
						continue
					}
					break
				}
				b.WriteByte(s[i])
				i++
			}
			v, s = b.String(), s[min(i+1, len(s)):]
			if j := strings.Index(s, "::"); j == 0 { // a cast after the literal
				k := strings.IndexByte(s, ',')
				if k < 0 {
					k = len(s)
				}
				s = s[k:]
			}
		} else {
			k := strings.IndexByte(s, ',')
			if k < 0 {
				k = len(s)
			}
			v, s = strings.TrimSpace(s[:k]), s[k:]
			switch strings.ToUpper(v) {
			case "MINVALUE", "MAXVALUE", "NULL":
				v = ""
			}
		}
		out = append(out, v)
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), ","))
	}
	return out
}
