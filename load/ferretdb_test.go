package load

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/transform"
)

// TestServerRerunDefaults writes 3,000 documents in batches of 1,000 (a
// migrate's default batch) with the default options, then writes them
// all again with new contents, as a resume's replayed batches or a sync
// do. On FerretDB 1.24 a bulk write of 100 or more replaces of existing
// documents stalls the server, and a replace by integer _id scans the
// collection: there the existing documents are deleted and inserted again,
// one deleteMany per batch (serverTarget.reinsert). Every document must
// end with the new contents, once. Both passes' times are logged.
func TestServerRerunDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: skipped in the short suite")
	}
	uri, db := testenv.MongoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := Open(ctx, uri, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	const n, batch = 3000, 1000
	pass := func(v string) time.Duration {
		start := time.Now()
		for from := int32(1); from <= n; from += batch {
			var docs []transform.Document
			for i := from; i < from+batch; i++ {
				docs = append(docs, doc(i, transform.Field{Key: "v", Value: v}, transform.Field{Key: "pad", Value: fmt.Sprintf("%0200d", i)}))
			}
			rejects, err := s.Write(ctx, "c", docs)
			if err != nil || len(rejects) > 0 {
				t.Fatalf("Write (%s): %v, rejects %v", v, err, rejects)
			}
		}
		return time.Since(start)
	}
	first := pass("first")
	rerun := pass("rerun")
	t.Logf("%d documents in batches of %d: first run %s, rerun %s (%.2fx)", n, batch, first.Round(time.Millisecond), rerun.Round(time.Millisecond), rerun.Seconds()/first.Seconds())
	got := testenv.DumpCollection(t, db, "c")
	if len(got) != n {
		t.Fatalf("%d documents after the rerun, want %d", len(got), n)
	}
	for _, d := range got {
		if want := `"v":"rerun"`; !strings.Contains(d, want) {
			t.Fatalf("a document the rerun did not replace: %s", d)
		}
	}
}
