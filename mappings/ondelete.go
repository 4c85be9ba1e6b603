package mappings

// What sync does with a document whose root row is gone (deleted, or no
// longer passing the root filter): a collection's onDelete.
//
//	onDelete: delete                  # the default: the document is deleted
//	onDelete: ignore                  # the document stays as it was
//	onDelete: {tombstone: deletedAt}  # it stays, with deletedAt: <a BSON date>
//
// A tombstone keeps the document's last content and adds the field once,
// holding when sync first found the root gone; a root row that comes back
// with the same key rebuilds the document, without the field. The field
// is a top-level field of the document, so it must be a name a target can
// store that no other field of the document takes: not _id, not the
// discriminator, no field the mapping writes (checked at resolve, where
// "*" and default names are known), and the document may have no field
// named by data (a pivot, key:), which could take it. A bucket
// collection's pages hold the rows of one parent, not one root row: only
// delete applies there.

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// OnDeleteMode is what sync does with a document whose root row is gone.
type OnDeleteMode string

const (
	// OnDeleteDelete deletes it (the default; "" means the same).
	OnDeleteDelete OnDeleteMode = "delete"
	// OnDeleteTombstone keeps it and sets its tombstone field to the time
	// sync found the root gone.
	OnDeleteTombstone OnDeleteMode = "tombstone"
	// OnDeleteIgnore keeps it as it was.
	OnDeleteIgnore OnDeleteMode = "ignore"
)

// OnDelete is a collection's onDelete: a mode, and for a tombstone the
// field that holds the deletion time.
type OnDelete struct {
	Mode OnDeleteMode
	// Field names the tombstone's date field (Mode tombstone only).
	Field string
	pos   positions
}

// UnmarshalYAML accepts "delete", "ignore" (or any scalar, for check to
// refuse with its reason) or {tombstone: field}.
func (o *OnDelete) UnmarshalYAML(n *yaml.Node) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	o.pos = positionsOf(n)
	if n.Kind == yaml.ScalarNode {
		o.Mode = OnDeleteMode(n.Value)
		return nil
	}
	var m struct {
		Tombstone string `yaml:"tombstone"`
	}
	if err := n.Decode(&m); err != nil {
		return err
	}
	o.Mode, o.Field = OnDeleteTombstone, m.Tombstone
	return nil
}

// OnDeleteOf returns the onDelete of a collection entry: delete when it
// has none.
func (col *Collection) OnDeleteOf() (OnDeleteMode, string) {
	if col.OnDelete == nil || col.OnDelete.Mode == "" {
		return OnDeleteDelete, ""
	}
	return col.OnDelete.Mode, col.OnDelete.Field
}

// checkOnDelete checks a collection's onDelete with what the file alone
// tells (the JSON Schema has checked its shape).
func (c *checker) checkOnDelete(col *Collection) {
	o := col.OnDelete
	if o == nil {
		return
	}
	switch o.Mode {
	case OnDeleteDelete, OnDeleteIgnore:
	case OnDeleteTombstone:
		if o.Field == "" {
			c.add(o.pos.self, "%s: onDelete: tombstone needs the name of the field that holds the deletion time: onDelete: {tombstone: deletedAt}", col.Name)
			return
		}
	default:
		c.add(o.pos.self, "%s: onDelete %q is not one of delete, ignore or {tombstone: <field>}", col.Name, o.Mode)
		return
	}
	if col.Bucket != nil && o.Mode != OnDeleteDelete {
		c.add(o.pos.self, "%s: a bucket collection's pages hold the rows of one parent, not one root row: onDelete %s does not apply (only delete)", col.Name, o.Mode)
		return
	}
	if o.Mode != OnDeleteTombstone {
		return
	}
	at := o.pos.at("tombstone")
	if why := FieldNameProblem(o.Field); why != "" {
		c.add(at, "%s: onDelete: tombstone field name %q cannot be stored: %s", col.Name, o.Field, why)
		return
	}
	switch {
	case o.Field == "_id":
		c.add(at, "%s: onDelete: the tombstone field cannot be _id; name a field of its own (deletedAt)", col.Name)
	case col.Discriminator != "" && o.Field == col.Discriminator:
		c.add(at, "%s: onDelete: the tombstone field %q is the discriminator; name a field of its own (deletedAt)", col.Name, o.Field)
	}
}

// sameOnDelete checks that the entries of a shared collection agree on
// onDelete: a document's fate is the collection's.
func (c *checker) sameOnDelete(cols []*Collection) {
	m0, f0 := cols[0].OnDeleteOf()
	for _, col := range cols[1:] {
		if col.Bucket != nil {
			continue
		}
		if m, f := col.OnDeleteOf(); m != m0 || f != f0 {
			p := col.pos.at("name")
			if col.OnDelete != nil {
				p = col.OnDelete.pos.self
			}
			c.add(p, "%s: every document type of a collection needs the same onDelete; line %d has %s", col.Name, cols[0].pos.at("name").Line, describeOnDelete(m0, f0))
		}
	}
}

func describeOnDelete(m OnDeleteMode, field string) string {
	if m == OnDeleteTombstone {
		return fmt.Sprintf("{tombstone: %s}", field)
	}
	return string(m)
}

// resolveOnDelete sets cp's onDelete and checks that the tombstone field
// is no field the document already has: the root's fields as resolved
// ("*", default names, links), and none named by data.
func (r *resolver) resolveOnDelete(cp *CollectionPlan, c *Collection) {
	cp.OnDelete, cp.Tombstone = c.OnDeleteOf()
	if cp.OnDelete != OnDeleteTombstone || cp.Tombstone == "" {
		return
	}
	at := c.OnDelete.pos.at("tombstone")
	for _, f := range cp.Root.Fields {
		switch {
		case f.Pivot != nil:
			r.add(at, "%s: onDelete: a field named by data (key:, line %d) could be named %q like the tombstone field; a tombstoned document needs a field of its own", c.Name, f.Pos.Line, cp.Tombstone)
			return
		case f.Name == cp.Tombstone:
			r.add(at, "%s: onDelete: the tombstone field %q is already a field of the document (line %d); name the tombstone field otherwise", c.Name, cp.Tombstone, f.Pos.Line)
			return
		}
	}
}
