package load

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/transform"
)

func doc(id int32, fields ...transform.Field) transform.Document {
	body := append(transform.Doc{{Key: "_id", Value: id}}, fields...)
	return transform.Document{Collection: "c", ID: id, Body: body, Source: "t (id)=(" + string(rune('0'+id)) + ")"}
}

func typed(id int32, kind, name string) transform.Document {
	d := doc(id, transform.Field{Key: "type", Value: kind}, transform.Field{Key: "name", Value: name})
	d.Discriminator = &transform.Field{Key: "type", Value: kind}
	return d
}

// TestServerTargetRerun writes documents, then the same _ids with other
// contents plus new ones (a rerun, or a batch replayed on resume): the
// new contents replace the old, nothing is duplicated.
func TestServerTargetRerun(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, db := testenv.MongoDB(t)
	ctx := context.Background()
	s, err := Open(ctx, uri, Options{BatchBytes: 200})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var first, second []transform.Document
	for i := int32(1); i <= 6; i++ {
		first = append(first, doc(i, transform.Field{Key: "v", Value: "old"}))
	}
	for i := int32(4); i <= 9; i++ { // 4-6 exist, 7-9 are new
		second = append(second, doc(i, transform.Field{Key: "v", Value: "new"}))
	}
	for _, docs := range [][]transform.Document{first, second} {
		rejects, err := s.Write(ctx, "c", docs)
		if err != nil || len(rejects) > 0 {
			t.Fatalf("Write: %v, rejects %v", err, rejects)
		}
	}
	got := testenv.DumpCollection(t, db, "c")
	want := []string{
		`{"_id":1,"v":"old"}`, `{"_id":2,"v":"old"}`, `{"_id":3,"v":"old"}`,
		`{"_id":4,"v":"new"}`, `{"_id":5,"v":"new"}`, `{"_id":6,"v":"new"}`,
		`{"_id":7,"v":"new"}`, `{"_id":8,"v":"new"}`, `{"_id":9,"v":"new"}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("collection after two writes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestServerTargetDiscriminator: in a shared collection a document replaces
// only one of its own type; an _id taken by another type is rejected, and
// the other document is left alone.
func TestServerTargetDiscriminator(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, db := testenv.MongoDB(t)
	ctx := context.Background()
	s, err := Open(ctx, uri, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if rejects, err := s.Write(ctx, "c", []transform.Document{typed(1, "book", "A"), typed(2, "review", "R")}); err != nil || len(rejects) > 0 {
		t.Fatalf("Write: %v, rejects %v", err, rejects)
	}
	rejects, err := s.Write(ctx, "c", []transform.Document{typed(1, "book", "A2"), typed(2, "book", "clash"), typed(3, "review", "R3")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rejects) != 1 || rejects[0].ID != int32(2) || !strings.Contains(rejects[0].Err.Error(), "already taken by another document type") {
		t.Fatalf("rejects = %v, want one for _id 2 taken by another type", rejects)
	}
	got := testenv.DumpCollection(t, db, "c")
	want := []string{`{"_id":1,"type":"book","name":"A2"}`, `{"_id":2,"type":"review","name":"R"}`, `{"_id":3,"type":"review","name":"R3"}`}
	if !slices.Equal(got, want) {
		t.Fatalf("collection:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestServerTargetRefused: a document the server refuses for another reason
// than a duplicate key is rejected with the server's message, and the rest
// of its batch is written.
func TestServerTargetRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, db := testenv.MongoDB(t)
	ctx := context.Background()
	s, err := Open(ctx, uri, Options{MaxDocSize: 60})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	big := doc(2, transform.Field{Key: "v", Value: strings.Repeat("x", 100)})
	rejects, err := s.Write(ctx, "c", []transform.Document{doc(1), big, doc(3)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rejects) != 1 || rejects[0].ID != int32(2) || !strings.Contains(rejects[0].Err.Error(), "over the target's limit of 60 bytes") {
		t.Fatalf("rejects = %v, want _id 2 over the size limit", rejects)
	}
	if got := testenv.DumpCollection(t, db, "c"); !slices.Equal(got, []string{`{"_id":1}`, `{"_id":3}`}) {
		t.Fatalf("collection: %v", got)
	}
}
