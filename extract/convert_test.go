package extract

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform"
)

// convertTestColumn is the column name every case uses: quoting is part of
// what is tested.
const convertTestColumn = `My "Col"`

var convertSchemaSeq atomic.Int64

// convertTestDB connects to DENORM_TEST_PG and creates a schema of its own,
// dropped (with everything in it) when the test ends.
func convertTestDB(t *testing.T) (*pgx.Conn, string) {
	t.Helper()
	url := os.Getenv("DENORM_TEST_PG")
	if url == "" {
		if testing.Short() {
			t.Skip("DENORM_TEST_PG not set: PostgreSQL conversion test skipped in the short suite")
		}
		t.Fatal("DENORM_TEST_PG not set: run `make test`, or go test -short for unit tests only")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to DENORM_TEST_PG: %v", err)
	}
	schema := fmt.Sprintf("denorm_convert_%d_%d", os.Getpid(), convertSchemaSeq.Add(1))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		conn.Close(ctx)
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(ctx)
	})
	return conn, schema
}

// literalColumn stores the SQL literal in a one-row table (CREATE TABLE AS
// keeps its type and typmod) and describes the column through ReadCatalog,
// as a migration does. It returns the table's qualified name.
func literalColumn(t *testing.T, ctx context.Context, conn *pgx.Conn, schema, table, literal string) (mappings.Column, string) {
	t.Helper()
	qt := pgx.Identifier{schema, table}.Sanitize()
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s AS SELECT %s AS %s", qt, literal, pgx.Identifier{convertTestColumn}.Sanitize())); err != nil {
		t.Fatalf("create table for %s: %v", literal, err)
	}
	cat, err := ReadCatalog(ctx, conn, []string{schema + "." + table})
	if err != nil {
		t.Fatal(err)
	}
	tb := cat.Table(schema + "." + table)
	if tb == nil || len(tb.Columns) != 1 {
		t.Fatalf("catalog of %s: %+v", qt, tb)
	}
	return tb.Columns[0], qt
}

// selectConverted reads the column back with SelectExpr and converts it.
func selectConverted(ctx context.Context, conn *pgx.Conn, qt string, col mappings.Column, mode mappings.NumericMode) (any, error) {
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT %s FROM %s AS t", SelectExpr(col, "t"), qt))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("no row")
	}
	vals, err := rows.Values()
	if err != nil {
		return nil, err
	}
	want, err := Convert(col, vals[0], mode)
	// The reader's decoder (direct decoding of common types from the wire)
	// must agree with rows.Values() + Convert on every row of the table.
	n := &mappings.Node{Table: &mappings.Table{Name: "t"}, Columns: []mappings.Column{col}, Numeric: []mappings.NumericMode{mode}}
	got, derr := newRowDecoder(n, rows).decode(rows.RawValues())
	if derr == nil {
		// A value that cannot be read stands in the row as Invalid.
		if iv, ok := got[0].(transform.Invalid); ok {
			derr = iv.Err
		}
	}
	if derr != nil && err == nil && (strings.Contains(derr.Error(), "-dimensional array") || strings.Contains(derr.Error(), "array subscripts ")) {
		return nil, derr // only the decoder sees the dimensions and bounds pgx drops
	}
	if (err == nil) != (derr == nil) {
		return nil, fmt.Errorf("rowDecoder error %v, Convert error %v", derr, err)
	}
	if err != nil {
		return nil, err
	}
	if g, w := fmt.Sprintf("%#v", got[0]), fmt.Sprintf("%#v", want); g != w {
		return nil, fmt.Errorf("rowDecoder gives %s, rows.Values() + Convert %s", g, w)
	}
	return want, nil
}

func mustUUID(s string) transform.UUID {
	var u pgtype.UUID
	if err := u.Scan(s); err != nil {
		panic(err)
	}
	return transform.UUID(u.Bytes)
}

// checkUTC fails when a time in v is not in time.UTC (cmp compares times
// with Equal, which ignores the location).
func checkUTC(t *testing.T, v any) {
	t.Helper()
	switch x := v.(type) {
	case time.Time:
		if x.Location() != time.UTC {
			t.Errorf("time %v is in %v, want UTC", x, x.Location())
		}
	case transform.Array:
		for _, e := range x {
			checkUTC(t, e)
		}
	case transform.Doc:
		for _, f := range x {
			checkUTC(t, f.Value)
		}
	}
}

func TestConvert(t *testing.T) {
	conn, schema := convertTestDB(t)
	ctx := context.Background()
	enum := pgx.Identifier{schema, "mood"}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE TYPE "+enum+" AS ENUM ('sad', 'ok', 'happy')"); err != nil {
		t.Fatal(err)
	}
	domain := pgx.Identifier{schema, "posint"}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DOMAIN "+domain+" AS integer CHECK (VALUE > 0)"); err != nil {
		t.Fatal(err)
	}
	arrDomain := pgx.Identifier{schema, "ints"}.Sanitize()
	if _, err := conn.Exec(ctx, "CREATE DOMAIN "+arrDomain+" AS integer[]"); err != nil {
		t.Fatal(err)
	}
	const bounds = "array subscripts "
	nan, inf := math.NaN(), math.Inf(1)
	const (
		dec = mappings.NumericDecimal
		dbl = mappings.NumericDouble
		str = mappings.NumericString
	)
	cases := []struct {
		name    string
		literal string
		mode    mappings.NumericMode // default decimal
		want    any
		wantErr string // substring of the query or conversion error
		// category checks what the catalog says, when set.
		category string
		// keep keeps char(n) padding (the mapping's char: keep).
		keep bool
	}{
		{name: "smallint", literal: "(-32768)::smallint", want: int32(-32768)},
		{name: "integer", literal: "2147483647::integer", want: int32(math.MaxInt32)},
		{name: "bigint", literal: "(-9223372036854775808)::bigint", want: int64(math.MinInt64)},
		{name: "numeric_decimal_scale", literal: "'12.50'::numeric(12,2)", want: transform.Decimal("12.50")},
		{name: "numeric_decimal_pads_scale", literal: "1::numeric(12,2)", want: transform.Decimal("1.00")},
		{name: "numeric_decimal_zero_scale", literal: "0::numeric(12,2)", want: transform.Decimal("0.00")},
		{name: "numeric_decimal_negative_fraction", literal: "'-0.00100'::numeric", want: transform.Decimal("-0.00100")},
		{name: "numeric_decimal_integer_trailing_zeros", literal: "'1000'::numeric", want: transform.Decimal("1000")},
		{name: "numeric_decimal_large_precision", literal: "'12345678901234567890.123456789'::numeric", want: transform.Decimal("12345678901234567890.123456789")},
		{name: "numeric_decimal_nan", literal: "'NaN'::numeric", want: transform.Decimal("NaN")},
		{name: "numeric_decimal_infinity", literal: "'Infinity'::numeric", want: transform.Decimal("Infinity")},
		{name: "numeric_decimal_negative_infinity", literal: "'-Infinity'::numeric", want: transform.Decimal("-Infinity")},
		{name: "numeric_double", literal: "'12.50'::numeric(12,2)", mode: dbl, want: 12.5},
		{name: "numeric_double_large_precision", literal: "'12345678901234567890.123456789'::numeric", mode: dbl, want: 12345678901234567890.123456789},
		{name: "numeric_double_nan", literal: "'NaN'::numeric", mode: dbl, want: nan},
		{name: "numeric_double_infinity", literal: "'Infinity'::numeric", mode: dbl, want: inf},
		{name: "numeric_double_negative_infinity", literal: "'-Infinity'::numeric", mode: dbl, want: -inf},
		{name: "numeric_double_out_of_range", literal: "'1e400'::numeric", mode: dbl, wantErr: "out of range for a double"},
		{name: "numeric_double_underflow", literal: "'1e-991'::numeric", mode: dbl, wantErr: "numeric value 0.00000000000000000000000000...0000000000000000000000000001 (993 characters) is too small for a double (its nearest double is 0); use numeric mode decimal or string"},
		{name: "numeric_double_negative_underflow", literal: "('-0.' || repeat('0', 400) || '1')::numeric", mode: dbl, wantErr: "too small for a double"},
		{name: "numeric_double_subnormal", literal: "'4e-324'::numeric", mode: dbl, want: 5e-324},
		{name: "numeric_double_zero_scale", literal: "'0.000'::numeric", mode: dbl, want: 0.0},
		{name: "numeric_string", literal: "'12.50'::numeric(12,2)", mode: str, want: "12.50"},
		{name: "numeric_string_large_precision", literal: "'12345678901234567890.123456789'::numeric", mode: str, want: "12345678901234567890.123456789"},
		{name: "numeric_string_nan", literal: "'NaN'::numeric", mode: str, want: "NaN"},
		{name: "numeric_string_infinity", literal: "'-Infinity'::numeric", mode: str, want: "-Infinity"},
		{name: "real", literal: "0.1::real", want: 0.1},
		{name: "real_nan", literal: "'NaN'::real", want: nan},
		{name: "double", literal: "1.5e300::double precision", want: 1.5e300},
		{name: "double_nan", literal: "'NaN'::double precision", want: nan},
		{name: "double_infinity", literal: "'Infinity'::double precision", want: inf},
		{name: "double_negative_infinity", literal: "'-Infinity'::double precision", want: -inf},
		{name: "text", literal: "'héllo, wörld'::text", want: "héllo, wörld"},
		{name: "varchar", literal: "'abc'::varchar(10)", want: "abc"},
		{name: "char_trimmed", literal: "'ab'::char(5)", want: "ab"},
		{name: "char_padded_keep", literal: "'ab'::char(5)", keep: true, want: "ab   "},
		{name: "char_blank", literal: "''::char(3)", want: ""},
		{name: "char_leading_blanks_stay", literal: "'  a'::char(5)", want: "  a"},
		{name: "varchar_trailing_blanks_stay", literal: "'a  '::varchar(5)", want: "a  "},
		{name: "name", literal: "'pg_class'::name", want: "pg_class"},
		{name: "internal_char", literal: `'x'::"char"`, want: "x"},
		{name: "boolean", literal: "false", want: false},
		{name: "date", literal: "'2024-02-29'::date", want: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},
		{name: "date_bc", literal: "'0044-03-15 BC'::date", want: time.Date(-43, 3, 15, 0, 0, 0, 0, time.UTC)},
		{name: "date_infinity", literal: "'infinity'::date", wantErr: "value infinity cannot be written"},
		{name: "timestamp", literal: "'2024-02-29 23:59:59.123456'::timestamp", want: time.Date(2024, 2, 29, 23, 59, 59, 123456000, time.UTC)},
		{name: "timestamp_infinity", literal: "'infinity'::timestamp", wantErr: "value infinity cannot be written"},
		{name: "timestamptz", literal: "'2024-03-01 12:30:45.5+05:30'::timestamptz", want: time.Date(2024, 3, 1, 7, 0, 45, 500000000, time.UTC)},
		{name: "timestamptz_negative_infinity", literal: "'-infinity'::timestamptz", wantErr: "value -infinity cannot be written"},
		{name: "uuid", literal: "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid", want: mustUUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")},
		{name: "bytea", literal: `'\x00ff10'::bytea`, want: transform.Binary{0x00, 0xff, 0x10}},
		{name: "bytea_empty", literal: `''::bytea`, want: transform.Binary{}},
		{name: "json_key_order", literal: `'{"b":1,"a":[1,2.5,"x",null,true]}'::json`, want: transform.Doc{
			{Key: "b", Value: int32(1)},
			{Key: "a", Value: transform.Array{int32(1), 2.5, "x", nil, true}},
		}},
		{name: "json_duplicate_key_last_wins", literal: `'{"a":1,"b":2,"a":3}'::json`, want: transform.Doc{
			{Key: "a", Value: int32(3)}, {Key: "b", Value: int32(2)},
		}},
		{name: "json_numbers", literal: `'[2147483648, -2147483648, 1e2, 1.0, 123456789012345678901234567890]'::json`, want: transform.Array{
			int64(2147483648), int32(-2147483648), 100.0, 1.0, transform.Decimal("123456789012345678901234567890"),
		}},
		{name: "json_scalar", literal: `'"x"'::json`, want: "x"},
		{name: "json_null", literal: `'null'::json`, want: nil},
		{name: "jsonb", literal: `'{"bb":{"y":false,"x":null},"a":[1,2.5,"x",null,true]}'::jsonb`, want: transform.Doc{
			{Key: "a", Value: transform.Array{int32(1), 2.5, "x", nil, true}},
			{Key: "bb", Value: transform.Doc{{Key: "x", Value: nil}, {Key: "y", Value: false}}},
		}},
		{name: "int_array_with_null", literal: "ARRAY[1, NULL, 3]::int[]", want: transform.Array{int32(1), nil, int32(3)}},
		{name: "int_array_empty", literal: "'{}'::int[]", want: transform.Array{}},
		{name: "int_array_lower_bound_zero", literal: "'[0:1]={7,8}'::int[]", wantErr: "array subscripts [0:1] do not start at 1"},
		{name: "int_array_two_dimensional", literal: "'{{1,2},{3,4}}'::int[]", wantErr: "2-dimensional array"},
		{name: "text_array", literal: "ARRAY['a', NULL, 'c']::text[]", want: transform.Array{"a", nil, "c"}},
		{name: "char_array", literal: "ARRAY['ab']::char(3)[]", want: transform.Array{"ab"}},
		{name: "char_array_keep", literal: "ARRAY['ab']::char(3)[]", keep: true, want: transform.Array{"ab "}},
		{name: "numeric_array", literal: "ARRAY[1, 2.5, NULL, 0]::numeric(6,2)[]", want: transform.Array{
			transform.Decimal("1.00"), transform.Decimal("2.50"), nil, transform.Decimal("0.00"),
		}},
		{name: "numeric_array_double", literal: "ARRAY[1, 2.5]::numeric[]", mode: dbl, want: transform.Array{1.0, 2.5}},
		{name: "timestamptz_array", literal: "ARRAY['2024-01-01 00:00:00+01']::timestamptz[]", want: transform.Array{time.Date(2023, 12, 31, 23, 0, 0, 0, time.UTC)}},
		{name: "timestamp_array_infinity", literal: "ARRAY['infinity']::timestamp[]", wantErr: "element 1: timestamp without time zone value infinity"},
		{name: "uuid_array", literal: "ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11']::uuid[]", want: transform.Array{mustUUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")}},
		{name: "jsonb_array", literal: `ARRAY['{"a":1}', '[true]']::jsonb[]`, want: transform.Array{transform.Doc{{Key: "a", Value: int32(1)}}, transform.Array{true}}},
		{name: "interval_array_as_text", literal: "ARRAY['1 day', '2 hours']::interval[]", want: transform.Array{"1 day", "02:00:00"}},
		{name: "enum", literal: "'happy'::" + enum, want: "happy", category: "E"},
		{name: "enum_array", literal: "ARRAY['sad', 'ok']::" + enum + "[]", want: transform.Array{"sad", "ok"}, category: "A"},
		{name: "domain_as_base_type", literal: "5::" + domain, want: int32(5)},
		{name: "domain_array", literal: "ARRAY[5, 6]::" + domain + "[]", want: transform.Array{int32(5), int32(6)}},
		{name: "interval_as_text", literal: "'1 day 02:03:04'::interval", want: "1 day 02:03:04"},
		{name: "inet_as_text", literal: "'10.1.2.3/8'::inet", want: "10.1.2.3/8"},
		{name: "int4range_as_text", literal: "int4range(1, 5)", want: "[1,5)"},
		{name: "xml_as_text", literal: "'<a>x</a>'::xml", want: "<a>x</a>"},
		{name: "time_as_text", literal: "'12:34:56'::time", want: "12:34:56"},
		// Arrays whose subscripts do not start at 1 reject the row, for
		// every element type and path.
		{name: "array_lower_bound_int", literal: "'[5:7]={1,2,3}'::int[]", wantErr: `column "My \"Col\"": array subscripts [5:7] do not start at 1: a document's array has no lower bound (5); renumber it from 1 with a field computed by PostgreSQL, sql: '"My ""Col"""[:]' (read the bound with sql: 'array_lower("My ""Col""", 1)' if it matters)`},
		{name: "array_lower_bound_zero_text", literal: "'[0:1]={a,b}'::text[]", wantErr: bounds + "[0:1] do not start at 1"},
		{name: "array_lower_bound_negative_numeric", literal: "'[-2:-1]={1.5,2}'::numeric[]", wantErr: bounds + "[-2:-1] do not start at 1"},
		{name: "array_lower_bound_timestamptz", literal: "'[2:2]={2024-01-01 00:00+00}'::timestamptz[]", wantErr: bounds + "[2:2] do not start at 1"},
		{name: "array_lower_bound_uuid", literal: "'[3:3]={a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}'::uuid[]", wantErr: bounds + "[3:3] do not start at 1"},
		{name: "array_lower_bound_interval_as_text", literal: "'[2:3]={1 day,2 days}'::interval[]", wantErr: bounds + "[2:3] do not start at 1"},
		{name: "array_lower_bound_jsonb_as_text", literal: `'[0:0]={"{\"a\": 1}"}'::jsonb[]`, wantErr: bounds + "[0:0] do not start at 1"},
		{name: "array_lower_bound_enum", literal: "'[9:9]={ok}'::" + enum + "[]", wantErr: bounds + "[9:9] do not start at 1"},
		{name: "array_lower_bound_domain_elements", literal: "'[4:5]={5,6}'::" + domain + "[]", wantErr: bounds + "[4:5] do not start at 1"},
		{name: "array_lower_bound_domain_over_array", literal: "'[4:5]={5,6}'::" + arrDomain, wantErr: bounds + "[4:5] do not start at 1"},
		{name: "array_slice_renumbered", literal: "('[5:7]={1,2,3}'::int[])[:]", want: transform.Array{int32(1), int32(2), int32(3)}},
		{name: "array_domain_over_array", literal: "'{5,6}'::" + arrDomain, want: transform.Array{int32(5), int32(6)}},
		{name: "null", literal: "NULL::integer", want: nil},
		{name: "null_jsonb", literal: "NULL::jsonb", want: nil},
		{name: "null_numeric", literal: "NULL::numeric", mode: dbl, want: nil},
	}
	opts := cmp.Options{cmpopts.EquateNaNs()}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			col, qt := literalColumn(t, ctx, conn, schema, fmt.Sprintf("c%d", i), tc.literal)
			col.KeepPadding = tc.keep
			if tc.category != "" && col.Category != tc.category {
				t.Errorf("catalog category = %q, want %q (column %+v)", col.Category, tc.category, col)
			}
			mode := tc.mode
			if mode == "" {
				mode = dec
			}
			got, err := selectConverted(ctx, conn, qt, col, mode)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s (%+v): err = %v, want one containing %q (value %#v)", tc.literal, col, err, tc.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s (%+v): %v", tc.literal, col, err)
			}
			if diff := cmp.Diff(tc.want, got, opts); diff != "" {
				t.Errorf("%s (%+v): value mismatch (-want +got):\n%s", tc.literal, col, diff)
			}
			checkUTC(t, got)
		})
	}
}

// TestConvertInfinityError checks the message tells what to do.
func TestConvertInfinityError(t *testing.T) {
	col := mappings.Column{Name: "at", Type: "timestamp with time zone", TypeName: "timestamptz", Category: "D"}
	_, err := Convert(col, pgtype.Infinity, mappings.NumericDecimal)
	if err == nil {
		t.Fatal("no error for infinity")
	}
	for _, s := range []string{"timestamp with time zone", "infinity", "filter", "cast"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

func TestConvertUnexpected(t *testing.T) {
	cases := []struct {
		name string
		col  mappings.Column
		v    any
		want string
	}{
		{"interval_not_cast", mappings.Column{Type: "interval", TypeName: "interval", Category: "T"}, pgtype.Interval{Days: 1, Valid: true}, "column type interval: cannot convert a value of Go type pgtype.Interval"},
		{"jsonb_decoded_natively", mappings.Column{Type: "jsonb", TypeName: "jsonb", Category: "U"}, map[string]any{"a": 1.0}, "column type jsonb: cannot convert a value of Go type map[string]interface {}"},
		{"array_for_scalar", mappings.Column{Type: "integer", TypeName: "int4", Category: "N"}, []any{int32(1)}, "Go type []interface {}"},
		{"nested_array", mappings.Column{Type: "integer[]", TypeName: "_int4", Category: "A", ElemTypeName: "int4", ElemCategory: "N"}, []any{[]any{int32(1)}}, "column type integer[]"},
		{"numeric_bad_type", mappings.Column{Type: "numeric", TypeName: "numeric", Category: "N"}, 1.5, "Go type float64"},
		{"unknown_uint", mappings.Column{TypeName: "oid", Category: "N"}, uint32(7), "column type oid: cannot convert a value of Go type uint32"},
		{"bad_mode", mappings.Column{Type: "numeric", TypeName: "numeric", Category: "N"}, "1", `unknown numeric mode "float"`},
		{"invalid_json", mappings.Column{Type: "json", TypeName: "json", Category: "U"}, `{"a":}`, "json: invalid character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mode := mappings.NumericDecimal
			if tc.name == "bad_mode" {
				mode = "float"
			}
			got, err := Convert(tc.col, tc.v, mode)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Convert(%#v) = %#v, %v; want error containing %q", tc.v, got, err, tc.want)
			}
		})
	}
}

func TestSelectExpr(t *testing.T) {
	cases := []struct {
		name      string
		col       mappings.Column
		qualifier string
		want      string
	}{
		{"native", mappings.Column{Name: "id", TypeName: "int8", Category: "N"}, "t", `"t"."id"`},
		{"native_unqualified_quoted", mappings.Column{Name: `We"ird`, TypeName: "numeric", Category: "N"}, "", `"We""ird"`},
		{"jsonb", mappings.Column{Name: "j", TypeName: "jsonb", Category: "U"}, "t", `"t"."j"::pg_catalog.text`},
		{"enum", mappings.Column{Name: "m", TypeName: "mood", Category: "E"}, "t", `"t"."m"::pg_catalog.text`},
		{"interval", mappings.Column{Name: "d", TypeName: "interval", Category: "T"}, "t", `"t"."d"::pg_catalog.text`},
		{"int2vector", mappings.Column{Name: "v", TypeName: "int2vector", Category: "A", ElemTypeName: "int2", ElemCategory: "N"}, "t", `"t"."v"::pg_catalog.text`},
		{"native_array", mappings.Column{Name: "a", TypeName: "_int4", Category: "A", ElemTypeName: "int4", ElemCategory: "N"}, "t", `"t"."a"`},
		{"text_cast_array", mappings.Column{Name: "it's", TypeName: "_interval", Category: "A", ElemTypeName: "interval", ElemCategory: "T"}, "", `"it's"::pg_catalog._text`},
		{"domain_array", mappings.Column{Name: "y", Type: "integer[]", TypeName: "_int4", Category: "A", ElemTypeName: "int4", ElemCategory: "N", Domain: "year[]"}, "t", `("t"."y")::integer[]`},
		{"domain", mappings.Column{Name: "y", Type: "integer", TypeName: "int4", Category: "N", Domain: "year"}, "t", `"t"."y"`},
		{"key_numeric", mappings.Column{Name: "k", Type: "text", TypeName: "text", Category: "S", Canon: mappings.CanonNumeric}, "t", `pg_catalog.trim_scale(("t"."k")::pg_catalog.numeric)::pg_catalog.text`},
		{"key_citext", mappings.Column{Name: "k", Type: "text", TypeName: "text", Category: "S", Canon: mappings.CanonCitext}, "j", `pg_catalog.lower(("j"."k")::pg_catalog.text COLLATE pg_catalog."default")`},
		{"sql_field", mappings.Column{Name: "epoch", SQL: "extract(epoch from ts)"}, "t", `pg_catalog.to_json((extract(epoch from ts)))::pg_catalog.text`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SelectExpr(tc.col, tc.qualifier); got != tc.want {
				t.Errorf("SelectExpr = %s\nwant           %s", got, tc.want)
			}
		})
	}
}

func TestNumericText(t *testing.T) {
	bi := func(s string) *big.Int {
		b, ok := new(big.Int).SetString(s, 10)
		if !ok {
			panic(s)
		}
		return b
	}
	cases := []struct {
		name  string
		n     pgtype.Numeric
		typ   string
		want  string
		float float64
	}{
		{"integer", pgtype.Numeric{Int: big.NewInt(42), Valid: true}, "numeric", "42", 42},
		{"positive_exp", pgtype.Numeric{Int: big.NewInt(-15), Exp: 3, Valid: true}, "numeric", "-15000", -15000},
		{"fraction", pgtype.Numeric{Int: big.NewInt(1250), Exp: -2, Valid: true}, "numeric(12,2)", "12.50", 12.5},
		{"leading_zeros", pgtype.Numeric{Int: big.NewInt(-5), Exp: -4, Valid: true}, "numeric", "-0.0005", -0.0005},
		{"min_int64", pgtype.Numeric{Int: big.NewInt(math.MinInt64), Exp: -1, Valid: true}, "numeric", "-922337203685477580.8", -922337203685477580.8},
		{"big", pgtype.Numeric{Int: bi("-123456789012345678901234567890"), Exp: -10, Valid: true}, "numeric", "-12345678901234567890.1234567890", -12345678901234567890.1234567890},
		{"zero_unconstrained", pgtype.Numeric{Int: big.NewInt(0), Valid: true}, "numeric", "0", 0},
		{"zero_scale", pgtype.Numeric{Int: big.NewInt(0), Valid: true}, "numeric(8,3)", "0.000", 0},
		{"zero_array_scale", pgtype.Numeric{Int: big.NewInt(0), Valid: true}, "numeric(8,1)[]", "0.0", 0},
		{"zero_precision_only", pgtype.Numeric{Int: big.NewInt(0), Valid: true}, "numeric(8)", "0", 0},
		{"nil_int", pgtype.Numeric{Valid: true}, "numeric", "0", 0},
		{"nan", pgtype.Numeric{NaN: true, Valid: true}, "numeric", "NaN", math.NaN()},
		{"infinity", pgtype.Numeric{InfinityModifier: pgtype.Infinity, Valid: true}, "numeric", "Infinity", math.Inf(1)},
		{"negative_infinity", pgtype.Numeric{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, "numeric", "-Infinity", math.Inf(-1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			col := mappings.Column{Type: tc.typ, TypeName: "numeric", Category: "N"}
			for _, m := range []struct {
				mode mappings.NumericMode
				want any
			}{
				{mappings.NumericDecimal, transform.Decimal(tc.want)},
				{mappings.NumericString, tc.want},
				{mappings.NumericDouble, tc.float},
				{"", transform.Decimal(tc.want)},
			} {
				got, err := Convert(col, tc.n, m.mode)
				if err != nil {
					t.Fatalf("mode %q: %v", m.mode, err)
				}
				if diff := cmp.Diff(m.want, got, cmpopts.EquateNaNs()); diff != "" {
					t.Errorf("mode %q (-want +got):\n%s", m.mode, diff)
				}
			}
		})
	}
	// NULL as a pgtype.Numeric.
	if got, err := Convert(mappings.Column{TypeName: "numeric"}, pgtype.Numeric{}, mappings.NumericDecimal); got != nil || err != nil {
		t.Errorf("invalid Numeric = %#v, %v; want nil", got, err)
	}
}

// jsonGeneric turns a converted JSON value into what encoding/json's generic
// decoding gives: map[string]any, []any, float64.
func jsonGeneric(v any) any {
	switch x := v.(type) {
	case transform.Doc:
		m := make(map[string]any, len(x))
		for _, f := range x {
			m[f.Key] = jsonGeneric(f.Value)
		}
		return m
	case transform.Array:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = jsonGeneric(e)
		}
		return a
	case int32:
		return jsonNum{strconv.FormatInt(int64(x), 10)}
	case int64:
		return jsonNum{strconv.FormatInt(x, 10)}
	case float64:
		return jsonNum{strconv.FormatFloat(x, 'g', -1, 64)}
	case transform.Decimal:
		return jsonNum{string(x)}
	case json.Number:
		return jsonNum{string(x)}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonGeneric(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = jsonGeneric(e)
		}
		return a
	}
	return v
}

// jsonNum is a number compared by value (sameDecimal), whatever its form.
type jsonNum struct{ s string }

// sameJSON compares generic JSON values, numbers by exact value.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case jsonNum:
		y, ok := b.(jsonNum)
		return ok && sameDecimal(x.s, y.s)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// checkJSONValue reports values of a type a JSON conversion must not give.
func checkJSONValue(v any) error {
	switch x := v.(type) {
	case transform.Doc:
		seen := map[string]bool{}
		for _, f := range x {
			if seen[f.Key] {
				return fmt.Errorf("duplicate key %q", f.Key)
			}
			seen[f.Key] = true
			if err := checkJSONValue(f.Value); err != nil {
				return err
			}
		}
	case transform.Array:
		for _, e := range x {
			if err := checkJSONValue(e); err != nil {
				return err
			}
		}
	case nil, string, bool, int32, int64, float64, transform.Decimal:
	default:
		return fmt.Errorf("unexpected %T", v)
	}
	return nil
}

func FuzzConvertJSON(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1,2.5,"x",null,true]}`,
		`{"a":1,"a":{"a":[]}}`,
		`[2147483647, 2147483648, -9223372036854775808, 9223372036854775808, 1e308, -0, 0.5e-3]`,
		`"\u00e9\ud83d\ude00\u0000"`,
		`null`, `true`, ` 1 `, `1 2`, `{"a":}`, `[1,]`, `1e400`, ``, `{`, `[[[[]]]]`,
		`{"":{"":""}}`,
	} {
		f.Add(s)
	}
	col := mappings.Column{Name: "j", Type: "jsonb", TypeName: "jsonb", Category: "U"}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Convert(col, s, mappings.NumericDecimal)
		// encoding/json, numbers kept as their text: every number must
		// come out with exactly its value (a double when one holds it, a
		// Decimal otherwise).
		var want any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		wantErr := dec.Decode(&want)
		if wantErr == nil {
			if _, e := dec.Token(); e != io.EOF {
				wantErr = fmt.Errorf("data after the value")
			}
		}
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("Convert(%q): err = %v, encoding/json err = %v", s, err, wantErr)
		}
		if err != nil {
			return
		}
		if e := checkJSONValue(got); e != nil {
			t.Fatalf("Convert(%q) = %#v: %v", s, got, e)
		}
		if g, w := jsonGeneric(got), jsonGeneric(want); !sameJSON(w, g) {
			t.Fatalf("Convert(%q) differs from encoding/json:\n json %#v\n ours %#v", s, w, g)
		}
	})
}

// TestConvertJSONNumbersExact: integers beyond int64, decimals with more
// digits than a double keeps and numbers beyond a double's range follow
// the numeric mode; numbers a double holds exactly stay doubles.
func TestConvertJSONNumbersExact(t *testing.T) {
	col := mappings.Column{Name: "j", Type: "jsonb", TypeName: "jsonb", Category: "U"}
	in := `[9223372036854775807, 9223372036854775808, 0.1, 0.1000000000000000055511151231257827, 3.14159265358979323846, 1e400, 1.5e-3, -0.0, 12345678901234567.5]`
	cases := map[mappings.NumericMode]transform.Array{
		mappings.NumericDecimal: {int64(9223372036854775807), transform.Decimal("9223372036854775808"), 0.1, transform.Decimal("0.1000000000000000055511151231257827"),
			transform.Decimal("3.14159265358979323846"), transform.Decimal("1e400"), 0.0015, math.Copysign(0, -1), transform.Decimal("12345678901234567.5")},
		mappings.NumericString: {int64(9223372036854775807), "9223372036854775808", 0.1, "0.1000000000000000055511151231257827",
			"3.14159265358979323846", "1e400", 0.0015, math.Copysign(0, -1), "12345678901234567.5"},
	}
	for mode, want := range cases {
		got, err := Convert(col, in, mode)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", mode, diff)
		}
	}
	// Double mode: a double may round, but a number out of its range is
	// an error (the row is rejected).
	got, err := Convert(col, `[9223372036854775808, 0.1000000000000000055511151231257827]`, mappings.NumericDouble)
	if err != nil || !cmp.Equal(got, transform.Array{9.223372036854776e18, 0.1}) {
		t.Errorf("double: %#v, %v", got, err)
	}
	if _, err := Convert(col, `{"a": 1e400}`, mappings.NumericDouble); err == nil || !strings.Contains(err.Error(), "out of range for a double") {
		t.Errorf("1e400 as a double: %v", err)
	}
	// And so is a non-zero number whose double would be 0.
	if _, err := Convert(col, `{"a": -1e-991}`, mappings.NumericDouble); err == nil || !strings.Contains(err.Error(), "number -1e-991 is too small for a double") {
		t.Errorf("-1e-991 as a double: %v", err)
	}
	if got, err := Convert(col, `[0e-991, 4e-324]`, mappings.NumericDouble); err != nil || !cmp.Equal(got, transform.Array{0.0, 5e-324}) {
		t.Errorf("zero and a subnormal as doubles: %#v, %v", got, err)
	}
}

// TestConvertJSONLargeObject covers objects past the size where duplicate
// keys are found through a map: the last value wins at the first position.
func TestConvertJSONLargeObject(t *testing.T) {
	var in strings.Builder
	want := transform.Doc{}
	in.WriteString("{")
	for i := range 40 {
		fmt.Fprintf(&in, `"k%d":%d,`, i, i)
		want = append(want, transform.Field{Key: fmt.Sprintf("k%d", i), Value: int32(i)})
	}
	in.WriteString(`"k3":"x","k35":"y","z":null}`)
	want[3].Value = "x"
	want[35].Value = "y"
	want = append(want, transform.Field{Key: "z"})
	got, err := Convert(mappings.Column{Type: "json", TypeName: "json", Category: "U"}, in.String(), mappings.NumericDecimal)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func BenchmarkConvert(b *testing.B) {
	cases := []struct {
		name string
		col  mappings.Column
		v    any
	}{
		{"int4", mappings.Column{Type: "integer", TypeName: "int4", Category: "N"}, int32(123456)},
		{"text", mappings.Column{Type: "text", TypeName: "text", Category: "S"}, "hello"},
		{"numeric", mappings.Column{Type: "numeric(12,2)", TypeName: "numeric", Category: "N"}, pgtype.Numeric{Int: big.NewInt(123450), Exp: -2, Valid: true}},
		{"timestamptz", mappings.Column{Type: "timestamp with time zone", TypeName: "timestamptz", Category: "D"}, time.Now()},
		{"int4_array", mappings.Column{Type: "integer[]", TypeName: "_int4", Category: "A", ElemTypeName: "int4", ElemCategory: "N"}, []any{int32(1), int32(2), nil, int32(4)}},
		{"jsonb", mappings.Column{Type: "jsonb", TypeName: "jsonb", Category: "U"}, `{"a": 1, "b": [true, "x", 2.5], "c": {"d": null}}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Convert(c.col, c.v, mappings.NumericDecimal); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRealAsPostgreSQLPrints holds the double a real becomes to the text
// PostgreSQL prints for it (extra_float_digits 1, its shortest decimal):
// random reals of every binade, and many whose shorter decimal sits on the
// midpoint to a neighbour (integers times powers of two above 2^24),
// which PostgreSQL's Ryū leaves out and strconv's shortest takes. Both
// the direct decoder and the codec path's conversion are checked, on the
// values in binary as a migration reads them.
func TestRealAsPostgreSQLPrints(t *testing.T) {
	conn, schema := convertTestDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := rand.New(rand.NewPCG(24, 32))
	var bits []int64
	for range 20_000 {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		bits = append(bits, int64(math.Float32bits(f)))
	}
	for range 20_000 {
		m := float64(1<<23 + r.IntN(1<<23))
		bits = append(bits, int64(math.Float32bits(float32(math.Ldexp(m, 1+r.IntN(100))))))
	}
	qt := pgx.Identifier{schema, "reals"}.Sanitize()
	// The reals from their bits, by PostgreSQL itself (no text on the way).
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE %s AS
SELECT b, ((CASE WHEN b >= 2147483648 THEN -1 ELSE 1 END) *
           (CASE WHEN (b >> 23) & 255 = 0 THEN (b & 8388607)::float8 * 2.0::float8 ^ -149
                 ELSE ((b & 8388607) + 8388608)::float8 * 2.0::float8 ^ (((b >> 23) & 255) - 150) END))::real AS r
FROM unnest($1::int8[]) AS b`, qt), bits); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET extra_float_digits = 1"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, fmt.Sprintf("SELECT b, r, r::text FROM %s", qt), pgx.QueryResultFormats{pgx.BinaryFormatCode, pgx.BinaryFormatCode, pgx.TextFormatCode})
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	col := mappings.Column{Name: "r", Type: "real", TypeName: "float4", Category: "N"}
	fast := fastDecoder(&col, mappings.NumericDecimal, pgtype.Float4OID, pgx.BinaryFormatCode)
	n, differ := 0, 0
	for rows.Next() {
		raw := rows.RawValues()
		b := int64(binary.BigEndian.Uint64(raw[0]))
		if math.Float32bits(math.Float32frombits(binary.BigEndian.Uint32(raw[1]))) != uint32(b) {
			t.Fatalf("bits %d: PostgreSQL made %x", b, raw[1])
		}
		text := string(raw[2])
		want, err := strconv.ParseFloat(text, 64)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float32frombits(uint32(b))
		got, ok := fast(&arena{}, raw[1])
		if !ok || got != any(want) {
			t.Fatalf("real %s (bits %d): direct decoder %v, PostgreSQL prints %s", strconv.FormatFloat(float64(f), 'g', -1, 32), b, got, text)
		}
		if v := float32To64(f); v != want {
			t.Fatalf("real %s: float32To64 %v, PostgreSQL prints %s", strconv.FormatFloat(float64(f), 'g', -1, 32), v, text)
		}
		if s := strconv.FormatFloat(float64(f), 'g', -1, 32); s != text {
			if v, _ := strconv.ParseFloat(s, 64); v != want {
				differ++ // strconv's shortest is another decimal
			}
		}
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(bits) || differ < 50 {
		t.Fatalf("%d reals compared of %d; %d where strconv's shortest is not PostgreSQL's: the midpoint cases are not exercised", n, len(bits), differ)
	}
	t.Logf("%d reals as PostgreSQL prints them; strconv's shortest differs for %d", n, differ)
}
