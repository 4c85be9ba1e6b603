//go:build denorm_poison

package extsort

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/denorm/denorm/internal/poison"
)

// TestIterPoisoned keeps a record's value past Next on a sorter that
// spilled: under denorm_poison it reads as poison. The keys come in
// descending order, so that the runs are sorted and several (keys in
// order would stream to one).
func TestIterPoisoned(t *testing.T) {
	s := New(t.TempDir(), "test", 1<<10)
	defer s.Close()
	for i := range 200 {
		if err := s.Add([]byte(fmt.Sprintf("%04d", 199-i)), []byte(fmt.Sprintf("value %04d with some length", i))); err != nil {
			t.Fatal(err)
		}
	}
	if s.Runs() < 2 {
		t.Fatalf("%d runs, want a spill", s.Runs())
	}
	it, err := s.Iter()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if !it.Next() {
		t.Fatal("no records")
	}
	kept, want := it.Value(), string(it.Value())
	for it.Next() {
	}
	if !bytes.Equal(kept, bytes.Repeat([]byte{poison.Byte}, len(want))) {
		t.Errorf("a value kept past Next reads %q, want poison", kept)
	}
}
