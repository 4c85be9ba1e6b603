package transform

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPagerParentsWithDashes: composite parent keys whose values hold "-"
// (or "%") are kept apart - ("a-b", 1) and ("a", "b-1")-like pairs once
// shared a parent key text, merging two parents into one page under the
// first one's fields - and single keys keep the "<key>-<page>" form.
func TestPagerParentsWithDashes(t *testing.T) {
	cp := plan(t, `
version: 1
collections:
  - name: lines
    table: order_line
    bucket: {by: [region, sku], size: 10, orderBy: line_no, items: lines}
    fields: [line_no]
`).Collections[0]
	var rows [][]any
	for _, r := range []struct {
		region, sku string
		line        int32
	}{{"a-b", "c", 1}, {"a", "b-c", 1}, {"a", "b-c", 2}, {"a%2D", "x", 1}, {"a-", "x", 1}} {
		rows = append(rows, row(t, cp.Root, map[string]any{"region": r.region, "sku": r.sku, "line_no": r.line, "order_no": int32(1)}))
	}
	p := NewPager(cp, nil)
	docs, errs := p.Add(rows, fixedRel{})
	docs = append(docs, p.Flush()...)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []string{"a%2Db-c-0:1", "a-b%2Dc-0:1,2", "a%252D-x-0:1", "a%2D-x-0:1"}
	if d := cmp.Diff(want, pageIDs(docs)); d != "" {
		t.Errorf("pages (-want +got):\n%s", d)
	}
	if region, _ := docs[1].Body.Get("region"); region != "a" {
		t.Errorf("second parent's page is filed under region %v", region)
	}
}

// TestPrefixedID: with idPrefix the _id is the prefix and the key's text;
// a composite key's values are escaped as in page ids; a value that has
// no text rejects the row.
func TestPrefixedID(t *testing.T) {
	p := plan(t, `
version: 1
collections:
  - {name: things, table: post, discriminator: type, idPrefix: "post-", fields: [name, {name: type, value: post}]}
  - {name: things, table: order_line, discriminator: type, idPrefix: "line-", fields: [sku, {name: type, value: line}]}
`)
	post, line := p.Collections[0], p.Collections[1]
	if got := ID(post, row(t, post.Root, map[string]any{"id": int32(42), "name": "x"})); got != "post-42" {
		t.Errorf("post _id %v", got)
	}
	r := row(t, line.Root, map[string]any{"region": "eu-west", "order_no": int32(7), "line_no": int32(-1), "sku": "s"})
	if got := ID(line, r); got != "line-eu%2Dwest-7-%2D1" {
		t.Errorf("line _id %v", got)
	}
	r[line.IDCols[0]] = Invalid{Err: errors.New("bad value")}
	if _, err := BuildOne(line, r, fixedRel{}); err == nil {
		t.Error("an invalid id value built a document")
	}
}

func TestAppendUUID(t *testing.T) {
	u := UUID{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}
	if got := string(appendUUID(nil, u)); got != "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" {
		t.Errorf("appendUUID = %s", got)
	}
}

// TestPagerSingleKeyWithDash: a single parent key keeps the
// "<key>-<page>" form even when it holds "-": the page number follows
// the last "-".
func TestPagerSingleKeyWithDash(t *testing.T) {
	cp := plan(t, `
version: 1
collections:
  - name: books
    table: book
    bucket: {by: pub_id, size: 1, items: lines}
    fields: [isbn]
`).Collections[0]
	var rows [][]any
	for i, pub := range []string{"a-1", "a-1", "a"} {
		rows = append(rows, row(t, cp.Root, map[string]any{"pub_id": pub, "id": string(rune('x' + i)), "isbn": "i"}))
	}
	p := NewPager(cp, nil)
	docs, errs := p.Add(rows, fixedRel{})
	docs = append(docs, p.Flush()...)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if d := cmp.Diff([]string{"a-1-0:i", "a-1-1:i", "a-0:i"}, pageIDs(docs)); d != "" {
		t.Errorf("pages (-want +got):\n%s", d)
	}
}

// TestSourceKeyText: the source named in rejects and verify's reports is
// in a user's words: NULL (not Go's <nil>), bytea as \x and hex (not a
// Go byte slice), a timestamp as RFC 3339, and a bucket's by column that
// its orderBy names again only once (found by the differential fuzzer).
func TestSourceKeyText(t *testing.T) {
	p := plan(t, `
version: 1
collections:
  - name: comments
    table: comment
    bucket: {by: post_id, size: 10, orderBy: [post_id, created_at]}
    fields: [author]
  - {name: posts, table: post, fields: [name]}
`)
	comments, posts := p.Collections[0], p.Collections[1]
	at := time.Date(2024, 1, 2, 3, 4, 5, 123_000_000, time.FixedZone("x", 3600))
	r := row(t, comments.Root, map[string]any{"post_id": nil, "created_at": at, "id": int32(7), "author": "a"})
	if got, want := SourceKey(comments, r), "comment (post_id, created_at, id)=(NULL, 2024-01-02T02:04:05.123Z, 7)"; got != want {
		t.Errorf("bucket row: %s, want %s", got, want)
	}
	r = row(t, posts.Root, map[string]any{"id": Binary{0, 0xff}, "name": "n"})
	if got, want := SourceKey(posts, r), `post (id)=(\x00ff)`; got != want {
		t.Errorf("bytea key: %s, want %s", got, want)
	}
}

// TestKeyProblem checks the reject's words for each fault of the
// field-name rule, in its order, and that NameOK agrees with them.
func TestKeyProblem(t *testing.T) {
	long := strings.Repeat("x", 40)
	for _, tc := range []struct{ name, want string }{
		{"a", ""},
		{long, ""},
		{"\xff", ""}, // names from data need not be UTF-8
		{"", "an empty field name"},
		{"$a.b\x00", `a field name starting with "$" (an operator to a server; {"$date": ...} and the like turn into other types in Extended JSON)`},
		{"a.b\x00", `a field name holding "." (a path to a server)`},
		{long + "\x00", "a field name holding a NUL character"},
	} {
		if got := keyProblem(tc.name); got != tc.want {
			t.Errorf("keyProblem(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if NameOK(tc.name) != (tc.want == "") {
			t.Errorf("NameOK(%q) = %v", tc.name, NameOK(tc.name))
		}
	}
}
