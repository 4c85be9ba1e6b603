package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
)

// addComments adds post 100 with n generated comments to the seed schema:
// created_at ties in threes (the id breaks them), ~80-byte texts.
func addComments(t *testing.T, db string, n int) {
	t.Helper()
	testenv.Exec(t, db, fmt.Sprintf(`
INSERT INTO post VALUES (100, 'A very popular post', 'Comments without end');
INSERT INTO comment (id, post_id, author, comment, created_at)
SELECT 1000 + g, 100, 'reader ' || g %% 1000, 'comment ' || g || ' ' || repeat('x', 60),
       timestamptz '2024-01-01 00:00:00+00' + (g / 3) * interval '1 second'
FROM generate_series(1, %d) g;
ANALYZE;`, n))
}

// TestBucketBoundedMemory migrates one post with 100,000 and with 1,000,000
// comments with the blog mapping (a 3-comment subset in the post, every
// comment in buckets of 100) and checks that the run's working set
// (workingSet) does not grow with the number of comments (at most 1.2x for
// 10x the comments), and that its peak live heap and peak RSS stay under
// absolute ceilings: the pager holds one page
// and the subset is read with a LIMIT per parent, so memory does not
// depend on a parent's number of children. Runs are interleaved and
// medians compared, as in TestBoundedMemory.
func TestBucketBoundedMemory(t *testing.T) {
	t.Parallel() // parallelTests: its own databases, target and job
	bin := denormBinary(t)
	mapping := example(t, "blog")
	sizes := []int{100000, 1000000}
	var dbs []string
	for _, n := range sizes {
		db := seedDB(t)
		addComments(t, db, n)
		dbs = append(dbs, db)
	}
	med := medianMemory(t, len(sizes), func(i int) memStats {
		return migrateMemory(t, bin, mapping, dbs[i], func(dir string) {
			// The seed has 4 pages (post 1: 250 comments, post 2: 2).
			if got, want := countLines(t, filepath.Join(dir, "comments.jsonl")), 4+(sizes[i]+99)/100; got != want {
				t.Fatalf("%d comments: wrote %d pages, want %d", sizes[i], got, want)
			}
			if got := countLines(t, filepath.Join(dir, "posts.jsonl")); got != 4 {
				t.Fatalf("%d comments: wrote %d posts, want 4", sizes[i], got)
			}
		})
	}, func(i int) string { return fmt.Sprintf("%8d comments on one post", sizes[i]) })
	// Measured at load 18 on 2 cores: working sets 5.8-6.1 MiB at both
	// sizes, peak live heap 6.6-7.8 MiB, peak RSS 28-30 MiB.
	checkMemory(t, "10x the comments of one post", med[0], med[1], memLimits{ratio: 1.2, heapCeiling: 16 << 20, rssCeiling: 64 << 20})
}
