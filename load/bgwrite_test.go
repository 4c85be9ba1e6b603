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
	if got, over := len(w.buf), cap(w.buf); got != 0 || over > bufCap(64) {
		t.Errorf("after Close the buffer holds %d bytes of capacity %d, want 0 of at most %d", got, over, bufCap(64))
	}
}

// TestBGWriterInPlace appends lines in place (buf, then filled), some
// taken back as a refused document is, mixed with Writes: the bytes kept
// arrive whole and in order, no write is over the size but a line over
// it on its own, and a buffer's capacity stays bufCap unless a line
// outgrew it.
func TestBGWriterInPlace(t *testing.T) {
	var want bytes.Buffer
	var out chunks
	w := newBGWriter(&out, 64)
	grown := 0
	for i := range 5000 {
		p := []byte(fmt.Sprintf("%d:%s;", i, bytes.Repeat([]byte{'y'}, i%90)))
		if i%7 == 3 {
			want.Write(p)
			w.Write(p)
			continue
		}
		start, before := len(w.buf), cap(w.buf)
		w.buf = append(w.buf, p...)
		if cap(w.buf) != before {
			grown++
			if start+len(p) <= before {
				t.Fatalf("line %d: the buffer grew with room for the line", i)
			}
		}
		if i%5 == 0 { // refused: taken back
			w.buf = w.buf[:start]
			continue
		}
		want.Write(p)
		if err := w.filled(); err != nil {
			t.Fatal(err)
		}
		if len(w.buf) >= 64 {
			t.Fatalf("line %d: filled left %d bytes, at or over the size", i, len(w.buf))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want.Bytes()) {
		t.Fatalf("%d bytes written, want %d", out.Len(), want.Len())
	}
	for i, n := range out.sizes {
		if n >= bufCap(64)+90 {
			t.Fatalf("write %d is %d bytes: more than a buffer and one line", i, n)
		}
	}
	t.Logf("%d of 5000 lines outgrew their buffer", grown)
}

// TestBGWriterInPlaceError: filled reports an earlier buffer's write
// error and drops what is buffered.
func TestBGWriterInPlaceError(t *testing.T) {
	boom := errors.New("disk full")
	w := newBGWriter(&failAfter{n: 1, err: boom}, 16)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		w.buf = append(w.buf, "0123456789"...)
		err = w.filled()
	}
	if !errors.Is(err, boom) {
		t.Fatalf("filled = %v, want %v", err, boom)
	}
	if len(w.buf) != 0 {
		t.Errorf("after the error %d bytes stay buffered", len(w.buf))
	}
	w.Close()
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
