//go:build denorm_poison

package load

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/denorm/denorm/internal/poison"
	"github.com/denorm/denorm/transform"
)

// TestScanPoisoned keeps the document a directory target's Scan hands to
// fn past fn's return: under denorm_poison, the next document's read
// overwrites it with poison first.
func TestScanPoisoned(t *testing.T) {
	tg := openTarget(t, filepath.Join(t.TempDir(), "out"), Options{})
	prepare(t, tg, nil, "c")
	write(t, tg, "c", transform.Document{ID: int32(1), Body: transform.Doc{{Key: "_id", Value: int32(1)}, {Key: "a", Value: "x"}}},
		transform.Document{ID: int32(2), Body: transform.Doc{{Key: "_id", Value: int32(2)}, {Key: "a", Value: "y"}}})
	var kept []byte
	if _, err := tg.Scan(context.Background(), "c", func(doc []byte) error {
		if kept == nil {
			kept = doc
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(kept, []byte{poison.Byte, poison.Byte, poison.Byte, poison.Byte}) {
		t.Errorf("a scanned document kept past fn reads %q, want poison", kept)
	}
}
