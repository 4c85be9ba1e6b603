package main

import (
	"testing"

	"github.com/denorm/denorm/mappings"
)

// TestStreamsAhead: one connection per table of the first collection the
// run reads (its root and every relation under it, at any depth), at
// most 4; with --collections, the first of those.
func TestStreamsAhead(t *testing.T) {
	f, err := mappings.Parse("ahead.yaml", []byte(`version: 1
collections:
  - name: plain
    table: a
    fields: [x]
  - name: nested
    table: p
    fields:
      - name: cs
        embed:
          table: c
          join: {p_id: id}
          fields:
            - n
            - {name: ds, embed: {table: d, join: {c_id: id}, fields: [k]}}
  - name: wide
    table: w
    fields:
      - {name: e1, embed: {table: e1, join: {w_id: id}, fields: [v]}}
      - {name: e2, embed: {table: e2, join: {w_id: id}, fields: [v]}}
      - {name: e3, embed: {table: e3, join: {w_id: id}, fields: [v]}}
      - {name: e4, embed: {table: e4, join: {w_id: id}, fields: [v]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		collections []string
		want        int
	}{
		{nil, 1},
		{[]string{"nested"}, 3},
		{[]string{"wide", "plain"}, 1}, // the file's order: plain first
		{[]string{"wide"}, 4},          // 5 tables, at most 4
		{[]string{"none"}, 0},
	} {
		if got := streamsAhead(f, c.collections); got != c.want {
			t.Errorf("streamsAhead(%v) = %d, want %d", c.collections, got, c.want)
		}
	}
}
