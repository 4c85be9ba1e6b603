package syncer

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// TestOverKeysLaterRule: one batch changes two tables that reach the same
// collection entry by two trace rules (hybrid's books: an author renamed,
// whose books the join table traces, and an image of another author), and
// the first rule traced reaches more documents than MaxKeys: the entry is
// rebuilt whole by a diff, and the seeds of its other rule, dropped with
// it, are not traced any more. (Found by TestSyncCrashPoints on Pagila:
// the trace went on to the dropped rule's seeds and dereferenced nil, a
// panic on every replay of the batch, which stopped the job for good.)
func TestOverKeysLaterRule(t *testing.T) {
	root := testenv.Root(t)
	db := testenv.PostgresDB(t, filepath.Join(root, "testdata", "examples", "seed.sql"))
	testenv.Exec(t, db, `INSERT INTO author VALUES ('a3', 'Prolific', 'Writer');
		INSERT INTO book SELECT 'p' || n, 'Book ' || n, 'mspress' FROM generate_series(1, 20) n;
		INSERT INTO book_author SELECT 'p' || n, 'a3' FROM generate_series(1, 20) n;`)
	pass := logicalSync(t, db, filepath.Join(root, "mappings", "examples", "hybrid.yaml"), func(o *Options) { o.MaxKeys = 5 })
	testenv.Exec(t, db, `BEGIN;
		UPDATE author SET last_name = 'Renamed' WHERE id = 'a3';
		UPDATE author_image SET url = url || '?v=2' WHERE id = 4;
		COMMIT;`)
	ct, st := pass()
	if !strings.Contains(strings.Join(st.Rebuilt, "; "), "books: more than 5 documents affected") {
		t.Errorf("books not rebuilt whole: %v", st.Rebuilt)
	}
	want := map[string]int{"b1": 1, "b4": 1} // a2's books (the image) ...
	for n := 1; n <= 20; n++ {
		want[fmt.Sprintf("p%d", n)] = 1 // ... and a3's (the rename): the diff writes what changed
	}
	checkWrites(t, ct, "books", want)
}
