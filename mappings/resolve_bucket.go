package mappings

// Buckets: a bucket collection writes one document per page of a parent
// key's rows (bucket: by, size, orderBy) rather than one per row. bucket
// resolves the parent key, the page layout and the total order the rows
// are read and paged in.

// bucket resolves a bucket collection's key and page layout.
func (r *resolver) bucket(cp *CollectionPlan, c *Collection) bool {
	b, n, t := c.Bucket, cp.Root, cp.Root.Table
	bp := &BucketPlan{Size: b.Size, Items: b.ItemsField(), Page: b.PageField(), SkipLast: b.SkipLast}
	ok := true
	for _, col := range b.By {
		i := r.need(n, col)
		if i < 0 {
			r.add(b.pos.at("by"), "%s.bucket: by: table %q has no column %q", c.Name, t.Name, col)
			ok = false
			continue
		}
		bp.By = append(bp.By, i)
		bp.ByNames = append(bp.ByNames, fieldName(&c.Entity, col))
		bp.ByKeys = append(bp.ByKeys, r.identity(n, i))
		if why := FieldNameProblem(bp.ByNames[len(bp.ByNames)-1]); why != "" {
			r.nameProblem(b.pos.at("by"), c.Name+".bucket", bp.ByNames[len(bp.ByNames)-1], why)
			ok = false
		}
		bp.StreamOrder = append(bp.StreamOrder, OrderCol{Col: i})
	}
	for _, name := range bp.ByNames {
		if name == bp.Items || name == bp.Page {
			r.add(b.pos.at("by"), "%s.bucket: the parent key field %q has the name of the items or page field", c.Name, name)
			ok = false
		}
	}
	for _, o := range b.OrderBy {
		col, desc, err := parseOrder(o)
		if err != nil {
			continue // reported by check
		}
		i := r.need(n, col)
		if i < 0 {
			r.add(b.pos.at("orderBy"), "%s.bucket: orderBy: table %q has no column %q", c.Name, t.Name, col)
			ok = false
			continue
		}
		n.Order = append(n.Order, OrderCol{Col: i, Desc: desc})
		bp.StreamOrder = append(bp.StreamOrder, OrderCol{Col: i, Desc: desc})
	}
	unique := t.PrimaryKey
	if len(unique) == 0 && len(t.Unique) > 0 {
		unique = t.Unique[0]
	}
	if len(unique) == 0 {
		r.add(c.pos.at("table"), "%s: table %q has no primary key or unique key of NOT NULL columns; bucket pages need one to order rows deterministically", c.Name, t.Name)
		return false
	}
	for _, col := range unique {
		bp.StreamOrder = append(bp.StreamOrder, OrderCol{Col: r.need(n, col)})
	}
	for i, k := range bp.StreamOrder {
		col := n.Columns[k.Col]
		what, why := keyTypeProblem(col)
		if what == "" {
			continue
		}
		ok = false
		switch {
		case i < len(bp.By):
			r.add(b.pos.at("by"), "%s.bucket: by: column %s is %s: it makes the _id of the pages, and %s; group by other columns, or map a view whose columns make a usable key", c.Name, col.Name, what, why)
		case i < len(bp.By)+len(n.Order):
			r.add(b.pos.at("orderBy"), "%s.bucket: orderBy: column %s is %s: the pages are read in this order, and %s; order by other columns", c.Name, col.Name, what, why)
		default:
			r.add(c.pos.at("table"), "%s.bucket: key column %s of %q is %s: it orders the pages' rows, and %s; map a view whose columns make a usable key", c.Name, col.Name, t.Name, what, why)
		}
	}
	for _, k := range bp.StreamOrder {
		cp.IDCols = append(cp.IDCols, k.Col)
	}
	cp.Bucket = bp
	return ok
}
