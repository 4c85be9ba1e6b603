package load

import (
	"context"
	"fmt"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/transform"
)

// benchRecord is a record of a job's typical size: 3 collections x 2
// workers (the body's shape is the job package's; its size is what
// counts here).
func benchRecord() *Record {
	body := []byte(`{"id": "j", "format": 1, "job": "j", "phase": "running", "streams": [`)
	for e := 0; e < 3; e++ {
		for w := 0; w < 2; w++ {
			if e+w > 0 {
				body = append(body, ',')
			}
			body = fmt.Appendf(body, `{"entry": %d, "collection": "coll%d", "worker": %d, "after": ["%d"], "done": false, "rows": 1048576, "written": 1048576, "failed": 0}`, e, e, w, 1000000+e)
		}
	}
	body = append(body, "]}"...)
	return &Record{ID: "j", Job: "j", Body: body}
}

// BenchmarkCheckpointSaveDir is the cost of one directory checkpoint: the
// data file flushed and fsynced (Sync, after a 1000-document batch of
// ~300 bytes each), then the checkpoint file written, fsynced and renamed.
func BenchmarkCheckpointSaveDir(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	if err := s.Prepare(ctx, Collections("people"), nil); err != nil {
		b.Fatal(err)
	}
	docs := make([]transform.Document, 1000)
	for i := range docs {
		docs[i] = transform.Document{ID: int32(i), Body: transform.Doc{{Key: "_id", Value: int32(i)}, {Key: "pad", Value: fmt.Sprintf("%0280d", i)}}}
	}
	store := s.Records()
	c := benchRecord()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := s.Write(ctx, "people", docs); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err = s.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		if err := store.Save(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointSaveServer is the cost of one checkpoint upsert into
// the _denorm collection of the test server (FerretDB).
func BenchmarkCheckpointSaveServer(b *testing.B) {
	ctx := context.Background()
	uri, _ := testenv.MongoDB(b)
	s, err := Open(ctx, uri, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	store := s.Records()
	c := benchRecord()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := store.Save(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}
