package difftest

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Case is one generated test case: a schema with its rows, a mapping over
// it, and what the harness may check independently of denorm.
type Case struct {
	Seed   uint64
	Types  []string // extensions, schemas, types and domains, in order
	Tables []*Table
	// Mapping is the mapping file as a tree; Mapping.YAML() writes it.
	Mapping *Node
	// Ferret is false when the mapping writes Decimal128 (numeric mode
	// decimal), which FerretDB cannot store: only the directory target
	// then.
	Ferret bool
	// BatchSize is migrate's and verify's --batch-size.
	BatchSize int
	// Workers is migrate's --workers for the server target.
	Workers int
	// Role, when set, is the role denorm connects as (a reader role that
	// row-level security applies to); the harness creates it.
	Role bool
	// Notes say what the generator drew (patterns, odd values), for
	// statistics and for the report of a failure.
	Notes []string
	// Checks are invariants computed from the source by plain SQL.
	Checks []Check
}

// Check is an invariant computed independently of denorm's builder: the
// multiset of numbers SQL returns must equal the multiset read from the
// target's documents of Collection: their count (Field ""), or each
// document's top-level Field, its length when it is an array.
type Check struct {
	Collection string
	Field      string
	SQL        string
	// Pages: the check counts bucket pages (Field "").
	What string
}

// Config chooses what the generator may draw.
type Config struct {
	// Open enables drawing the classes named (see Classes). The harness
	// opens every class but those Closed lists.
	Open map[string]bool
}

// Closed are the classes the harness does not draw by default: open
// findings (the fuzzing note lists them), kept off so that a run keeps
// finding new ones.
var Closed = map[string]bool{"ferret": true, "sqlerror": true}

// Classes are the switches of failure classes: issue 25's (numbered,
// fixed since) and the fuzzer's own open findings. A class is drawn only
// when Config.Open names it.
var Classes = map[string]string{
	"inherit":        "1: inheritance parents as roots (keys not unique across children)",
	"rls":            "2: row-level security hiding rows from the connected role",
	"exproverflow":   "3: integer overflow in expr: fields",
	"dottedtable":    "6: table names with dots, and schemas sharing a table name with public under a search_path",
	"submillis":      "7: sub-millisecond timestamps (BSON dates hold milliseconds)",
	"underflow":      "8: numeric: double underflow of tiny non-zero numerics",
	"ties":           "9: ordering with ties in tables without a primary key",
	"lowerbound":     "10: arrays with a lower bound other than 1",
	"mappingnumbers": "11: mapping numbers at their bounds (bucket.size 2^63-1, huge limits)",
	"infkey":         "13: ±infinity date/timestamp primary keys",
	"arraykey":       "14: array and jsonb primary keys, and such columns in a bucket's orderBy (keys of its stream)",
	"yamlconst":      "18: YAML constants .nan, 1e400, 2^64",
	"numericzero":    "fixed: an unconstrained numeric zero with a scale (0.0, 0.00) was written as 0 (pgx drops a zero's display scale); migrate reads it from the wire now, as the oracle keeps it",
	"sqlerror":       "sql: fields PostgreSQL fails on some rows (date_part of a date past timestamp's range): migrate ends with PostgreSQL's error (exit 1, the mapping reference's rule: one statement cannot skip a row), which the harness counts as a failure; the oracle computing such fields on rows no document holds is fixed",
	"sumoverflow":    "fixed: sum or avg of double, real or interval values whose sum overflows ended migrate with PostgreSQL's error (exit 1); such sums are exact now, and one beyond the type's range rejects its row",
	"bucketpage":     "fixed: a decimal beyond Decimal128, found only when encoding, rejected a whole bucket page in migrate, one item row in verify --oracle sql; it rejects its row when read now",
	"ferret":         "FerretDB 1.24 bugs met by data (control characters in field names; a top-level name with a double quote from a pivot): failures, not counted apart",
}

// gen is one case's generator state.
type gen struct {
	*rng
	cfg          Config
	c            *Case
	citext       bool
	nestedArrays bool // jsonb may hold arrays inside arrays (not on FerretDB)
	names        map[string]bool
	typeN        int
	rootColl     map[*Table]string // plain collections by root table
	collNames    map[string]bool
	curColl      string // the plain collection being drawn (for checks)
	curFilter    string
}

func (g *gen) open(class string) bool { return g.cfg.Open[class] }

func (g *gen) note(format string, args ...any) {
	g.c.Notes = append(g.c.Notes, fmt.Sprintf(format, args...))
}

func (g *gen) typeName(base string) string {
	g.typeN++
	if g.chance(0.3) {
		return fmt.Sprintf("%s %d Ü", base, g.typeN)
	}
	return fmt.Sprintf("%s%d", base, g.typeN)
}

// Generate draws the case of seed.
func Generate(seed uint64, cfg Config) *Case {
	g := &gen{rng: newRNG(seed), cfg: cfg, c: &Case{Seed: seed, Ferret: true}, names: map[string]bool{}}
	g.citext = g.chance(0.5)
	g.nestedArrays = g.chance(0.3)
	if g.citext {
		g.c.Types = append(g.c.Types, "CREATE EXTENSION IF NOT EXISTS citext;")
	}
	g.c.BatchSize = pick(g.rng, 1, 2, 3, 7, 50, 1000)
	g.c.Workers = pick(g.rng, 1, 1, 1, 2, 3)
	g.schema()
	g.data()
	g.mapping()
	return g.c
}

// tableName draws a table name: plain, mixed case, blanks, unicode,
// keywords; several schemas may hold the same name.
func (g *gen) tableName() (schema, name string) {
	for {
		switch g.weighted(6, 2, 1, 1, 1, 1) {
		case 0:
			name = pick(g.rng, "person", "orders", "item", "tag", "note", "city", "account", "line", "event", "doc")
		case 1:
			name = pick(g.rng, "Person", "OrderLine", "MiXeD", "UPPER")
		case 2:
			name = pick(g.rng, "order item", "two  blanks", "trailing ")
		case 3:
			name = pick(g.rng, "tëst", "日本", "ñandú")
		case 4:
			name = pick(g.rng, "select", "user", "order", "table")
		default:
			if g.open("dottedtable") {
				name = pick(g.rng, "a.b", "x.y.z")
			} else {
				name = pick(g.rng, "quote\"d", "semi;colon", "dollar$")
			}
		}
		schema = ""
		if g.chance(0.25) {
			schema = pick(g.rng, "s1", "Other Schema", "ünï")
		}
		if g.chance(0.5) {
			name = fmt.Sprintf("%s%d", name, len(g.names))
		}
		full := schema + "\x00" + name
		if !g.names[full] {
			g.names[full] = true
			return schema, name
		}
	}
}

// colName draws a column name; odd ones (a dot, a dollar, _id, names
// whose camelCase forms collide) now and then.
func (g *gen) colName(t *Table) string {
	for i := 0; ; i++ {
		var n string
		switch g.weighted(30, 6, 3, 1, 3) {
		case 0:
			n = pick(g.rng, "name", "title", "amount", "created_at", "kind", "note", "value", "qty", "label", "flag", "data", "at", "score", "code")
		case 1:
			n = pick(g.rng, "MixedCase", "UPPER", "ünï", "日本", "with space", "order", "select")
		case 2:
			n = pick(g.rng, "a_b", "aB", "first_name", "firstName", "x__y")
		case 3:
			n = pick(g.rng, "a.b", "$x", "_id", "x$")
		default:
			n = fmt.Sprintf("c%d", len(t.Cols))
		}
		if i > 5 || g.chance(0.3) {
			n = fmt.Sprintf("%s_%d", n, len(t.Cols))
		}
		if t.col(n) == nil {
			return n
		}
	}
}

// keyType draws a type for a key column.
func (g *gen) keyType() *colType {
	var t *colType
	switch g.weighted(8, 3, 2, 3, 2, 1, 1, 1, 1, 1) {
	case 0:
		t = intType(g, pick(g.rng, 32, 64, 16))
	case 1:
		t = textType(g)
	case 2:
		t = numericType(g)
		if strings.HasPrefix(t.SQL, "numeric(") && !strings.HasSuffix(t.SQL, ",0)") {
			// keep distinct keys representable: at least 3 integer digits
			t = numericType(g)
		}
	case 3:
		t = uuidType()
	case 4:
		t = pick(g.rng, dateType(g), timestampType(g, false), timestampType(g, true))
	case 5:
		t = byteaType()
	case 6:
		t = enumType(g)
	case 7:
		t = otherType(g)
	case 8:
		t = timeType(false)
	default:
		t = domainType(g, intType(g, 64))
	}
	if !t.Key || t.key == nil {
		return intType(g, 32)
	}
	if strings.HasPrefix(t.SQL, "numeric(") {
		var p, s int
		fmt.Sscanf(t.SQL, "numeric(%d,%d)", &p, &s)
		if p-s < 4 {
			return intType(g, 64)
		}
	}
	return t
}

// valueType draws a type for an ordinary column: every family.
func (g *gen) valueType() *colType {
	switch g.weighted(4, 3, 2, 5, 2, 4, 1, 1, 2, 1, 3, 3, 2, 2, 2, 2) {
	case 0:
		return intType(g, pick(g.rng, 16, 32, 64))
	case 1:
		return numericType(g)
	case 2:
		return floatType(g.chance(0.4))
	case 3:
		return textType(g)
	case 4:
		return boolType()
	case 5:
		return pick(g.rng, dateType(g), timestampType(g, false), timestampType(g, true))
	case 6:
		return timeType(g.chance(0.5))
	case 7:
		return intervalType()
	case 8:
		return uuidType()
	case 9:
		return byteaType()
	case 10:
		return jsonType(g.chance(0.7))
	case 11:
		return otherType(g)
	case 12:
		return enumType(g)
	case 13:
		return compositeType(g)
	case 14:
		base := g.valueType()
		if base.elem != nil || base.Fam == "composite" {
			return base
		}
		if g.chance(0.2) {
			base = arrayType(base)
		}
		return domainType(g, base)
	default:
		e := g.valueType()
		if e.elem != nil || strings.HasPrefix(e.Fam, "domain/array") {
			return e
		}
		return arrayType(e)
	}
}

// schema draws the tables: entities, their children (foreign keys to
// earlier tables, of the same or a compatible type), join tables between
// two entities, and the odd kinds (no primary key, partitioned,
// inheritance, generated columns, row-level security).
func (g *gen) schema() {
	for _, s := range []string{"s1", "Other Schema", "ünï"} {
		g.c.Types = append(g.c.Types, "CREATE SCHEMA IF NOT EXISTS "+ident(s)+";")
	}
	n := g.between(1, 5)
	for i := 0; i < n; i++ {
		t := g.entityTable()
		g.c.Tables = append(g.c.Tables, t)
	}
	// join tables between two keyed entities
	keyed := func() []*Table {
		var out []*Table
		for _, t := range g.c.Tables {
			if !t.Join && len(t.IDCols()) > 0 && t.Parent == nil {
				out = append(out, t)
			}
		}
		return out
	}()
	if len(keyed) >= 1 {
		for j := g.weighted(3, 3, 1); j > 0; j-- {
			a, b := keyed[g.n(len(keyed))], keyed[g.n(len(keyed))]
			g.c.Tables = append(g.c.Tables, g.joinTable(a, b))
		}
	}
	if g.open("inherit") && g.chance(0.3) {
		for _, p := range g.c.Tables {
			if !p.Join && !p.Partitioned && len(p.PK) == 1 && p.Parent == nil {
				g.c.Tables = append(g.c.Tables, g.inheritor(p))
				break
			}
		}
	}
	if g.open("rls") && g.chance(0.3) {
		t := g.c.Tables[g.n(len(g.c.Tables))]
		if len(t.IDCols()) > 0 {
			t.RLS = "(" + ident(t.IDCols()[0]) + ")::text < 'm' OR true = false"
			g.c.Role = true
			g.note("rls on %s", t.Name)
		}
	}
}

// entityTable draws one entity table, possibly the child of earlier ones.
func (g *gen) entityTable() *Table {
	s, name := g.tableName()
	t := &Table{Schema: s, Name: name, keyParent: map[string]int{}}
	switch g.weighted(7, 2, 2) {
	case 0: // a single-column primary key
		col := &Column{Name: pick(g.rng, "id", "Id", "key", "ïd", "id col"), T: g.keyType(), NotNull: true}
		if g.open("arraykey") && g.chance(0.03) {
			col.T = pick(g.rng, arrayType(intType(g, 32)), jsonType(true))
			col.T.key = func(g *gen, i int) string {
				if col.T.Fam == "jsonb" {
					return lit(fmt.Sprintf(`{"k": %d}`, i))
				}
				return fmt.Sprintf("ARRAY[%d]", i)
			}
		}
		t.Cols = append(t.Cols, col)
		t.PK = []string{col.Name}
		if g.chance(0.15) && hashable(col.T) {
			t.Partitioned = true
			g.note("partitioned %s", name)
		}
	case 1: // a composite primary key
		a := &Column{Name: "k1", T: intType(g, 32), NotNull: true}
		b := &Column{Name: pick(g.rng, "k2", "K 2"), T: g.keyType(), NotNull: true}
		t.Cols = append(t.Cols, a, b)
		t.PK = []string{a.Name, b.Name}
	default: // no primary key; maybe a unique not-null column
		g.note("no primary key %s", name)
		if g.chance(0.5) {
			col := &Column{Name: "uid", T: g.keyType(), NotNull: true}
			t.Cols = append(t.Cols, col)
			t.Unique = [][]string{{col.Name}}
		}
	}
	// parents: foreign keys to earlier entities
	for _, p := range g.c.Tables {
		if p.Join || len(p.IDCols()) == 0 || !g.chance(0.55) {
			continue
		}
		g.foreignKey(t, p, g.chance(0.7) && !t.Partitioned)
	}
	for k := g.weighted(1, 3, 3, 2, 1); k > 0; k-- {
		c := &Column{Name: g.colName(t), T: g.valueType(), NotNull: g.chance(0.15)}
		t.Cols = append(t.Cols, c)
	}
	g.generated(t)
	return t
}

// foreignKey adds to t the columns of a reference to p's key, of the same
// type or (now and then) a compatible one PostgreSQL compares with it.
func (g *gen) foreignKey(t, p *Table, nullable bool) *FK {
	fk := &FK{Ref: p, RefCols: p.IDCols(), Enforced: g.chance(0.5)}
	for _, rc := range p.IDCols() {
		pc := p.col(rc)
		ct := pc.T
		if g.chance(0.25) {
			ct = compatible(g, pc.T)
			if ct != pc.T {
				fk.Enforced = false // a foreign key needs equal types
			}
		}
		name := fmt.Sprintf("%s_%s", strings.NewReplacer(".", "_", "$", "_").Replace(strings.ToLower(truncRunes(p.Name, 8))), rc)
		if t.col(name) != nil {
			name = fmt.Sprintf("%s_%d", name, len(t.Cols))
		}
		t.Cols = append(t.Cols, &Column{Name: name, T: ct, NotNull: !nullable})
		fk.Cols = append(fk.Cols, name)
	}
	if g.chance(0.15) && !t.Partitioned {
		fk.Unique = true // one child per parent: the columns stay nullable
		for _, c := range fk.Cols {
			t.col(c).NotNull = false
		}
	}
	t.FKs = append(t.FKs, fk)
	return fk
}

// compatible is a type PostgreSQL's = compares with t exactly as t (the
// same keys match), or t itself.
func compatible(g *gen, t *colType) *colType {
	switch {
	case t.Int == 16 || t.Int == 32:
		ct := pick(g.rng, intType(g, 64), numericType(g))
		if strings.HasPrefix(ct.SQL, "numeric(") {
			return t
		}
		ct.key = t.key
		return ct
	case t.Int == 64:
		ct := &colType{}
		*ct = *numericTypePlain()
		ct.key = t.key
		return ct
	case t.SQL == "text" || strings.HasPrefix(t.SQL, "varchar("):
		return &colType{SQL: pick(g.rng, "text", "varchar(500)"), Fam: "text", Key: true, Order: true, MinMax: true, Text: true, Exact: true, value: t.value, key: t.key}
	case t.SQL == "date":
		ct := timestampType(g, false)
		ct.key = t.key
		return ct
	}
	return t
}

func numericTypePlain() *colType {
	return &colType{SQL: "numeric", Fam: "numeric", Key: true, Order: true, MinMax: true, Sum: true}
}

// joinTable is a table of pairs of a's and b's keys (a link, or the
// through table of a many-to-many embed).
func (g *gen) joinTable(a, b *Table) *Table {
	s, name := g.tableName()
	t := &Table{Schema: s, Name: name + "_link", Join: true, keyParent: map[string]int{}}
	fa := g.foreignKey(t, a, false)
	fb := g.foreignKey(t, b, false)
	fa.Unique, fb.Unique = false, false
	for _, c := range t.Cols {
		c.NotNull = true
	}
	if g.chance(0.7) {
		t.PK = append(slices.Clone(fa.Cols), fb.Cols...)
	} else {
		g.note("join table without a primary key %s", t.Name)
	}
	if g.chance(0.5) {
		t.Cols = append(t.Cols, &Column{Name: g.colName(t), T: g.valueType()})
	}
	return t
}

// inheritor is a table inheriting p's columns: its rows are p's rows too
// (SELECT from p reads them), and its keys may repeat p's.
func (g *gen) inheritor(p *Table) *Table {
	s, name := g.tableName()
	t := &Table{Schema: s, Name: name + "_child", Parent: p, keyParent: map[string]int{}}
	t.Cols = append(t.Cols, p.Cols...)
	t.PK = p.PK
	t.FKs = append(t.FKs, p.FKs...)
	for _, fk := range t.FKs {
		fk.Enforced = false
	}
	t.Cols = append(t.Cols, &Column{Name: g.colName(t), T: g.valueType()})
	g.note("inheritance %s under %s", t.Name, p.Name)
	return t
}

// generated adds a stored generated column computed from another column.
func (g *gen) generated(t *Table) {
	if !g.chance(0.2) {
		return
	}
	for _, c := range t.Cols {
		switch {
		case c.T.Int > 0:
			t.Cols = append(t.Cols, &Column{Name: g.colName(t), T: numericTypePlain(), Generated: ident(c.Name) + "::numeric * 3 + 1"})
		case c.T.SQL == "text":
			t.Cols = append(t.Cols, &Column{Name: g.colName(t), T: &colType{SQL: "integer", Fam: "integer", Int: 32, Order: true, MinMax: true, Sum: true, Exact: true}, Generated: "length(" + ident(c.Name) + ")"})
		default:
			continue
		}
		g.note("generated column in %s", t.Name)
		return
	}
}

// data draws every table's rows: keys distinct as PostgreSQL compares
// them (spelled differently now and then), foreign keys pointing to
// parents' rows (with duplicates, NULLs and, where no constraint stops
// them, orphans), the rest random with edge values and NULLs.
func (g *gen) data() {
	for _, t := range g.c.Tables {
		n := pick(g.rng, 0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20)
		if g.chance(0.08) {
			n = g.between(100, 400)
		}
		if t.Parent != nil {
			n = g.between(1, 5)
		}
		if ids := t.IDCols(); len(ids) == 1 {
			if m := t.col(ids[0]).T.maxKeys; m > 0 {
				n = min(n, m)
			}
		}
		ordinals := make([]int, n)
		base := 0
		if t.Parent != nil && !g.open("inherit") {
			base = 1000
		} else if t.Parent != nil {
			base = g.n(3) // keys may repeat the parent's
		}
		for i := range ordinals {
			ordinals[i] = base + i
		}
		shuffle(g.rng, ordinals) // insertion order is not key order
		t.keyOrd = ordinals
		cols := t.Insertable()
		fkOf := map[string]*FK{}
		fkIdx := map[string]int{}
		for _, fk := range t.FKs {
			for i, c := range fk.Cols {
				fkOf[c], fkIdx[c] = fk, i
			}
		}
		usedFK := map[*FK]map[int]bool{}
		seen := map[string]bool{}
		for r := 0; r < n; r++ {
			row := make([]string, len(cols))
			// one parent per foreign key and row
			parent := map[*FK]int{}
			skip := false
			for _, fk := range t.FKs {
				np := len(fk.Ref.Rows)
				switch {
				case np == 0 || (g.chance(0.1) && !fk.Cols2NotNull(t)):
					parent[fk] = -1 // NULL
				case !fk.Enforced && g.chance(0.1):
					parent[fk] = -2 // orphan
				default:
					j := fk.Ref.keyOrd[pick(g.rng, g.n(np), 0, np-1)]
					if fk.Unique {
						if usedFK[fk] == nil {
							usedFK[fk] = map[int]bool{}
						}
						if usedFK[fk][j] {
							j = -1
						}
						if j >= 0 {
							usedFK[fk][j] = true
						}
					}
					parent[fk] = j
				}
				if parent[fk] == -1 && fk.Cols2NotNull(t) {
					if fk.Enforced && np > 0 {
						parent[fk] = fk.Ref.keyOrd[0]
					} else {
						parent[fk] = -2
						fk.Enforced = false // an orphan: no constraint
					}
				}
				if parent[fk] == -2 && (fk.Unique || fk.Ref.fewKeys()) {
					// an orphan of an enum key would repeat a label
					switch {
					case np > 0 && !fk.Unique:
						parent[fk] = fk.Ref.keyOrd[g.n(np)]
					case !fk.Cols2NotNull(t):
						parent[fk] = -1
					default:
						skip = true
					}
				}
				if parent[fk] == -2 {
					parent[fk] = len(fk.Ref.keyOrd) + 20 + r // an ordinal no parent row has
				}
			}
			if skip {
				continue
			}
			for i, c := range cols {
				if fk := fkOf[c.Name]; fk != nil {
					j := parent[fk]
					rc := fk.Ref.col(fk.RefCols[fkIdx[c.Name]])
					switch {
					case j == -1:
						row[i] = "NULL"
					default:
						row[i] = g.keyValue(fk.Ref, rc, j, c)
					}
					continue
				}
				if slices.Contains(t.IDCols(), c.Name) {
					row[i] = g.keyValue(t, c, ordinals[r], c)
					continue
				}
				if !c.NotNull && g.chance(0.2) {
					row[i] = "NULL"
					continue
				}
				row[i] = c.T.value(g)
			}
			if t.Join && len(t.PK) > 0 {
				// the pair of parents, as PostgreSQL compares the keys
				var key []string
				for _, fk := range t.FKs {
					key = append(key, fmt.Sprint(parent[fk]))
				}
				k := strings.Join(key, " ")
				if seen[k] {
					continue // the pair is there already
				}
				seen[k] = true
			}
			t.Rows = append(t.Rows, row)
		}
		if t.Partitioned || t.Join {
			continue
		}
	}
	// an inheritor's rows are also its parent's: keep the parent's key
	// ordinals covering both so children of the parent may point to them
}

// fewKeys says whether t's key has few distinct values (an enum's
// labels), so that ordinals past them wrap.
func (t *Table) fewKeys() bool {
	for _, c := range t.IDCols() {
		if col := t.col(c); col != nil && col.T.maxKeys > 0 {
			return true
		}
	}
	return false
}

// Cols2NotNull says whether any of fk's columns is NOT NULL in t.
func (fk *FK) Cols2NotNull(t *Table) bool {
	for _, c := range fk.Cols {
		if col := t.col(c); col != nil && col.NotNull {
			return true
		}
	}
	return false
}

// keyValue is the literal of key column c of table t for the row of
// ordinal i, written for a column of type into's type (the same type or
// a compatible one).
func (g *gen) keyValue(t *Table, c *Column, i int, into *Column) string {
	idCols := t.IDCols()
	if len(idCols) == 2 && c.Name == idCols[0] {
		i = i / 2
	} else if len(idCols) == 2 {
		i = i % 2
	}
	if c.T.key == nil {
		return c.T.value(g)
	}
	return c.T.key(g, i)
}

// sortedNotes are the notes, deduplicated and sorted.
func (c *Case) sortedNotes() []string {
	s := slices.Clone(c.Notes)
	sort.Strings(s)
	return slices.Compact(s)
}

// hashable says whether a hash-partitioned table may use t as its key.
func hashable(t *colType) bool {
	switch strings.TrimPrefix(t.Fam, "domain/") {
	case "smallint", "integer", "bigint", "numeric", "text", "varchar", "uuid", "date", "timestamp", "timestamptz", "bytea":
		return true
	}
	return false
}
