package load

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/transform"
)

// TestServerRejectsWhatClosesTheConnection: FerretDB closes the
// connection on a document holding a NaN double instead of answering with
// a write error. Such documents are rejected, one by one, the rest of
// their batch written, quickly (not retried for the retry period), and an
// infinite double - a write error - is rejected as before.
func TestServerRejectsWhatClosesTheConnection(t *testing.T) {
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
	var docs []transform.Document
	bad := map[int32]bool{3: true, 4: true, 9: true, 17: true}
	for i := int32(1); i <= 20; i++ {
		v := any(float64(i) / 2)
		switch {
		case i == 17:
			v = math.Inf(1)
		case bad[i]:
			v = transform.Doc{{Key: "x", Value: math.NaN()}}
		}
		docs = append(docs, doc(i, transform.Field{Key: "v", Value: v}))
	}
	start := time.Now()
	w := &RetryWriter{Writer: s, Policy: RetryPolicy{For: time.Minute, Base: 100 * time.Millisecond, Cap: time.Second}}
	rejects, err := w.Write(ctx, "c", docs)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %s", took)
	}
	got := map[int32]bool{}
	for _, r := range rejects {
		got[r.ID.(int32)] = true
		if r.ID == int32(17) && !strings.Contains(r.Err.Error(), "infinity") || r.ID != int32(17) && !strings.Contains(r.Err.Error(), "closed the connection") {
			t.Errorf("reject %v: %v", r.ID, r.Err)
		}
	}
	if len(got) != len(bad) {
		t.Errorf("rejected %v, want %v", got, bad)
	}
	for id := range bad {
		if !got[id] {
			t.Errorf("document %d not rejected", id)
		}
	}
	if n := len(testenv.DumpCollection(t, db, "c")); n != 20-len(bad) {
		t.Errorf("%d documents stored, want %d", n, 20-len(bad))
	}
}
