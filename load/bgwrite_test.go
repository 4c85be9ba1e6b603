package load

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// chunks records the writes it gets.
type chunks struct {
	bytes.Buffer
	sizes []int
}

func (c *chunks) Write(p []byte) (int, error) {
	c.sizes = append(c.sizes, len(p))
	return c.Buffer.Write(p)
}

// TestBGWriter writes pieces of every size through a small buffer and
// checks that the bytes arrive whole and in order, after Flush and after
// Close, and that no write is over the buffer's size unless it is one
// piece over it on its own (a buffer grown by it is not kept).
func TestBGWriter(t *testing.T) {
	var want bytes.Buffer
	var out chunks
	big := map[int]bool{} // sizes of the pieces over 64 bytes
	w := newBGWriter(&out, 64)
	for i := range 5000 {
		p := []byte(fmt.Sprintf("%d:%s;", i, bytes.Repeat([]byte{'x'}, i%150)))
		if len(p) > 64 {
			big[len(p)] = true
		}
		want.Write(p)
		if n, err := w.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		if i%1000 == 999 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want.Bytes()) {
				t.Fatalf("after Flush at %d: %d bytes written, want %d", i, out.Len(), want.Len())
			}
		}
	}
	w.Write([]byte("tail"))
	want.WriteString("tail")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want.Bytes()) {
		t.Fatalf("after Close: %d bytes written, want %d", out.Len(), want.Len())
	}
	for i, n := range out.sizes {
		if n > 64 && !big[n] {
			t.Fatalf("write %d is %d bytes: more than the buffer's 64 and not one piece", i, n)
		}
	}
	if got, over := len(w.buf), cap(w.buf); got != 0 || over > 64 {
		t.Errorf("after Close the buffer holds %d bytes of capacity %d, want 0 of at most 64", got, over)
	}
}

type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	f.n--
	return len(p), nil
}

// TestBGWriterError: a failed write is reported by a later Write or Flush.
func TestBGWriterError(t *testing.T) {
	boom := errors.New("disk full")
	w := newBGWriter(&failAfter{n: 2, err: boom}, 16)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = w.Write(bytes.Repeat([]byte{'y'}, 20))
		if i%10 == 9 && err == nil {
			err = w.Flush()
		}
	}
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if err := w.Close(); !errors.Is(err, boom) {
		t.Fatalf("Close = %v, want %v", err, boom)
	}
}
