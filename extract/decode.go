package extract

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/denorm/denorm/mappings"
)

// rowDecoder turns the raw values of a result row into document values.
// The commonest column types (integers, text, boolean, double) are decoded
// straight from their wire bytes into the values Convert would return;
// every other column goes through pgx's codec for its type and then
// Convert, exactly as rows.Values() would. It saves an allocation and a
// type switch per value on the hot path of every migration.
type rowDecoder struct {
	node  *mappings.Node
	m     *pgtype.Map
	cols  []decodeCol
	width int
}

type decodeCol struct {
	col  mappings.Column
	mode mappings.NumericMode
	oid  uint32
	fmt  int16
	fast func(src []byte) (any, bool)
}

func newRowDecoder(n *mappings.Node, rows pgx.Rows) *rowDecoder {
	fds := rows.FieldDescriptions()
	d := &rowDecoder{node: n, m: rows.Conn().TypeMap(), width: len(n.Columns) + len(n.JoinKeyCols)}
	d.cols = make([]decodeCol, d.width)
	for i := range d.cols {
		col, mode := keyColumn(n, i)
		c := decodeCol{col: col, mode: mode}
		if i < len(fds) {
			c.oid, c.fmt = fds[i].DataTypeOID, fds[i].Format
			c.fast = fastDecoder(col, c.oid, c.fmt)
		}
		d.cols[i] = c
	}
	return d
}

// fastDecoder is the direct decoder of a column of catalog type typeName
// arriving as oid in format, or nil. Each returns false when the bytes are
// not what the type's binary format says (then the codec path decides).
func fastDecoder(col mappings.Column, oid uint32, format int16) func([]byte) (any, bool) {
	typeName := col.TypeName
	switch {
	case typeName == "text" && oid == pgtype.TextOID,
		typeName == "varchar" && oid == pgtype.VarcharOID,
		typeName == "name" && oid == pgtype.NameOID:
		// The same bytes in the text and the binary format.
		return func(src []byte) (any, bool) { return string(src), true }
	case typeName == "bpchar" && oid == pgtype.BPCharOID:
		return func(src []byte) (any, bool) { return trimChar(&col, string(src)), true }
	case format != pgx.BinaryFormatCode:
		return nil
	case typeName == "int2" && oid == pgtype.Int2OID:
		return func(src []byte) (any, bool) {
			if len(src) != 2 {
				return nil, false
			}
			return int32(int16(binary.BigEndian.Uint16(src))), true
		}
	case typeName == "int4" && oid == pgtype.Int4OID:
		return func(src []byte) (any, bool) {
			if len(src) != 4 {
				return nil, false
			}
			return int32(binary.BigEndian.Uint32(src)), true
		}
	case typeName == "int8" && oid == pgtype.Int8OID:
		return func(src []byte) (any, bool) {
			if len(src) != 8 {
				return nil, false
			}
			return int64(binary.BigEndian.Uint64(src)), true
		}
	case typeName == "float8" && oid == pgtype.Float8OID:
		return func(src []byte) (any, bool) {
			if len(src) != 8 {
				return nil, false
			}
			return math.Float64frombits(binary.BigEndian.Uint64(src)), true
		}
	case typeName == "bool" && oid == pgtype.BoolOID:
		return func(src []byte) (any, bool) {
			if len(src) != 1 {
				return nil, false
			}
			return src[0] == 1, true
		}
	}
	return nil
}

// decode converts one row. raw is only read during the call.
func (d *rowDecoder) decode(raw [][]byte) ([]any, error) {
	if len(raw) < d.width {
		return nil, fmt.Errorf("%s: the query returned %d columns, want %d", d.node.Table.Name, len(raw), d.width)
	}
	row := make([]any, d.width)
	for i := range d.cols {
		src := raw[i]
		if src == nil {
			continue // NULL
		}
		c := &d.cols[i]
		if c.fast != nil {
			if v, ok := c.fast(src); ok {
				row[i] = v
				continue
			}
		}
		var v any
		var err error
		if c.col.Category == "A" && c.fmt == pgx.BinaryFormatCode {
			err = checkArrayDims(&c.col, src)
		}
		if err != nil {
		} else if t, ok := d.m.TypeForOID(c.oid); ok {
			v, err = t.Codec.DecodeValue(d.m, c.oid, c.fmt, src)
		} else if c.fmt == pgx.TextFormatCode {
			v = string(src)
		} else {
			v = append([]byte(nil), src...)
		}
		if err == nil {
			v, err = Convert(c.col, v, c.mode)
		}
		if err != nil {
			// The row is read; a document that would hold the value is
			// rejected (see transform.Invalid).
			row[i] = invalidValue(&c.col, v, err)
			continue
		}
		row[i] = v
	}
	return row, nil
}
