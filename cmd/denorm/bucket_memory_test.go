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
// comment in buckets of 100) and checks that the median peak RSS of the
// built binary grows by less than 20% for 10x the comments: the pager holds
// one page and the subset is read with a LIMIT per parent, so memory does
// not depend on a parent's number of children. Runs are interleaved and
// medians compared, as in TestBoundedMemory.
func TestBucketBoundedMemory(t *testing.T) {
	bin := denormBinary(t)
	mapping := example(t, "blog")
	sizes := []int{100000, 1000000}
	var dbs []string
	for _, n := range sizes {
		db := seedDB(t)
		addComments(t, db, n)
		dbs = append(dbs, db)
	}
	med := medianPeaks(t, len(sizes), func(i int) int64 {
		return migratePeak(t, bin, mapping, dbs[i], func(dir string) {
			// The seed has 4 pages (post 1: 250 comments, post 2: 2).
			if got, want := countLines(t, filepath.Join(dir, "comments.jsonl")), 4+(sizes[i]+99)/100; got != want {
				t.Fatalf("%d comments: wrote %d pages, want %d", sizes[i], got, want)
			}
			if got := countLines(t, filepath.Join(dir, "posts.jsonl")); got != 4 {
				t.Fatalf("%d comments: wrote %d posts, want 4", sizes[i], got)
			}
		})
	}, func(i int) string { return fmt.Sprintf("%8d comments on one post", sizes[i]) })
	small, large := med[0], med[1]
	ratio := float64(large) / float64(small)
	t.Logf("ratio of medians 1M/100k: %.2fx", ratio)
	if ratio >= 1.2 {
		t.Errorf("median peak RSS grew %.2fx for 10x the comments of one post (%d KiB -> %d KiB); want less than 1.2x", ratio, small, large)
	}
	underCeiling(t, large)
}
