package load

import (
	"context"
	"fmt"
	"testing"

	"github.com/denorm/denorm/internal/testenv"
	"github.com/denorm/denorm/transform"
)

// benchCheckpoint is a checkpoint of a typical size: 3 collections x 2 workers.
func benchCheckpoint() *Checkpoint {
	c := validCheckpoint()
	for e := 0; e < 3; e++ {
		for w := 0; w < 2; w++ {
			k := fmt.Sprint(1000000 + e)
			c.Streams = append(c.Streams, StreamState{Entry: e, Collection: fmt.Sprint("coll", e), Worker: 0, After: []*string{&k}, Rows: 1 << 20, Written: 1 << 20})
		}
	}
	return c
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
	store := s.Checkpoints()
	c := benchCheckpoint()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := s.Write(ctx, "people", docs); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if c.Files, err = s.Sync(ctx); err != nil {
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
	store := s.Checkpoints()
	c := benchCheckpoint()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := store.Save(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}
