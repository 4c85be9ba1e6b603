package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/denorm/denorm/transform"
)

func TestDirTargetResumeTruncates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	doc := func(id int32) transform.Document {
		return transform.Document{ID: id, Body: transform.Doc{{Key: "_id", Value: id}}}
	}
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(ctx, Collections("a", "b"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "a", []transform.Document{doc(1), doc(2)}); err != nil {
		t.Fatal(err)
	}
	offsets, err := s.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if offsets["a.jsonl"] != int64(len("{\"_id\":1}\n{\"_id\":2}\n")) || offsets["b.jsonl"] != 0 {
		t.Fatalf("offsets %v", offsets)
	}
	// Written after the checkpoint, then the process dies.
	if _, err := s.Write(ctx, "a", []transform.Document{doc(3)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "b", []transform.Document{doc(9)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := Open(ctx, dir, Options{})
	if err := r.Prepare(ctx, Collections("a", "b"), offsets); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Write(ctx, "a", []transform.Document{doc(3)}); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a.jsonl"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.jsonl"))
	if string(a) != "{\"_id\":1}\n{\"_id\":2}\n{\"_id\":3}\n" || string(b) != "" {
		t.Fatalf("after resume: a=%q b=%q", a, b)
	}
	// A file shorter than its checkpoint was changed by someone else.
	r2, _ := Open(ctx, dir, Options{})
	if err := r2.Prepare(ctx, Collections("b"), map[string]int64{"b.jsonl": 100}); err == nil || !strings.Contains(err.Error(), "--restart") {
		t.Fatalf("short file: err = %v", err)
	}
}

func TestTransient(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		retry bool
		after time.Duration
	}{
		{"nil", nil, false, 0},
		{"cosmos_throttle", mongo.CommandError{Code: 16500, Message: "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later. RetryAfterMs=120"}, true, 120 * time.Millisecond},
		{"cosmos_throttle_in_bulk_reject", errors.New(`target refused the document: Request rate is large (code 16500)`), true, 0},
		{"retryable_label", mongo.CommandError{Code: 91, Labels: []string{"RetryableWriteError"}}, true, 0},
		{"duplicate_key", mongo.CommandError{Code: 11000, Message: "E11000"}, false, 0},
		{"plain", errors.New("boom"), false, 0},
		{"canceled", context.Canceled, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			retry, after := Transient(tc.err)
			if retry != tc.retry || after != tc.after {
				t.Errorf("Transient = %v, %v; want %v, %v", retry, after, tc.retry, tc.after)
			}
		})
	}
}

// flakyWriter fails its first writes with a throttling error.
type flakyWriter struct {
	fails, calls int
}

func (f *flakyWriter) Write(_ context.Context, c string, docs []transform.Document) ([]transform.Reject, error) {
	f.calls++
	if f.calls <= f.fails {
		return []transform.Reject{{Collection: c, ID: docs[0].ID, Err: errors.New("target refused the document: Request rate is large. RetryAfterMs=5 (code 16500)")}}, nil
	}
	return nil, nil
}

func TestRetryWriterThrottling(t *testing.T) {
	f := &flakyWriter{fails: 3}
	s := &RetryWriter{Writer: f, Policy: RetryPolicy{For: 10 * time.Second, Base: time.Millisecond, Cap: 20 * time.Millisecond}}
	rejects, err := s.Write(context.Background(), "c", []transform.Document{{ID: 1}})
	if err != nil || len(rejects) != 0 || f.calls != 4 {
		t.Fatalf("rejects %v, err %v after %d calls; want success on the 4th", rejects, err, f.calls)
	}
	// Giving up after the policy's time, with the cause.
	f = &flakyWriter{fails: 1 << 30}
	s = &RetryWriter{Writer: f, Policy: RetryPolicy{For: 50 * time.Millisecond, Base: 5 * time.Millisecond, Cap: 10 * time.Millisecond}}
	if _, err := s.Write(context.Background(), "c", []transform.Document{{ID: 1}}); err == nil || !strings.Contains(err.Error(), "gave up after") {
		t.Fatalf("err = %v, want a give-up", err)
	}
	// An interrupt ends the waits.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = &RetryWriter{Writer: &flakyWriter{fails: 1 << 30}, Policy: RetryPolicy{For: time.Hour, Base: time.Minute, Cap: time.Minute}, Stop: ctx}
	start := time.Now()
	if _, err := s.Write(context.Background(), "c", []transform.Document{{ID: 1}}); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %s; want an immediate interrupted error", err, time.Since(start))
	}
}
