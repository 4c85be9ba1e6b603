package load

import (
	"io"
	"sync"

	"github.com/denorm/denorm/internal/poison"
)

// bgWriter is a buffered writer that hands full buffers to a goroutine of
// its own for the write system call, so that encoding the next documents
// goes on while the kernel copies (and, on a busy disk, throttles) the last
// ones: the directory target's writes took a sixth of a migration's CPU
// time on the critical path. At most bgBuffers buffers exist per writer
// (of 256 KiB for the directory target: as much memory as one buffer of
// 1 MiB).
//
// Write and Flush are called by one goroutine. A write error is returned by
// the next Write or Flush, and everything after it is dropped.
type bgWriter struct {
	w    io.Writer
	size int
	buf  []byte
	full chan []byte // buffers to write, in order
	free chan []byte // buffers written, for reuse
	done chan struct{}
	wg   sync.WaitGroup // buffers handed over and not yet written

	mu  sync.Mutex
	err error
}

// bgBuffers bounds the buffers of one writer: one filling, the others
// queued or being written.
const bgBuffers = 4

// bufCap is the capacity of a writer's buffers of the given size: a
// quarter more, the room filled leaves a line that starts below the size
// (64 KiB for the directory target's 256 KiB).
func bufCap(size int) int { return size + size/4 }

func newBGWriter(w io.Writer, size int) *bgWriter {
	b := &bgWriter{w: w, size: size, buf: make([]byte, 0, bufCap(size)),
		full: make(chan []byte, bgBuffers-2), free: make(chan []byte, bgBuffers), done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *bgWriter) loop() {
	defer close(b.done)
	for buf := range b.full {
		if b.error() == nil {
			if _, err := b.w.Write(buf); err != nil {
				b.mu.Lock()
				b.err = err
				b.mu.Unlock()
			}
		}
		if buf = poison.Reuse(buf); buf != nil { // w must not keep it (io.Writer): it is reused
			b.free <- buf[:0]
		}
		b.wg.Done()
	}
}

func (b *bgWriter) error() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Write buffers p.
func (b *bgWriter) Write(p []byte) (int, error) {
	if err := b.error(); err != nil {
		return 0, err
	}
	if len(b.buf) > 0 && len(b.buf)+len(p) > b.size {
		b.handOff() // keep the buffers at their size
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) >= b.size {
		b.handOff()
	}
	return len(p), nil
}

func (b *bgWriter) handOff() {
	b.wg.Add(1)
	b.full <- b.buf
	select {
	case buf := <-b.free:
		if cap(buf) > bufCap(b.size) {
			buf = make([]byte, 0, bufCap(b.size)) // one document over the size: do not keep it
		}
		b.buf = buf
	default:
		b.buf = make([]byte, 0, bufCap(b.size))
	}
}

// Lines are appended in place, without Write's copy: the caller appends
// to buf (from its end, never reading or changing what is there) and then
// calls filled, which hands the buffer off once it reaches its size. The
// buffers have room beyond their size (bufCap), so that a line that
// starts below the size seldom needs a larger buffer (the append would
// copy the whole buffer). The directory target's lines took a copy each
// through Write: 3-5% of the CPU of a migration into a directory.
//
// filled returns the write error of an earlier buffer, as Write does.
func (b *bgWriter) filled() error {
	if err := b.error(); err != nil {
		b.buf = b.buf[:0]
		return err
	}
	if len(b.buf) >= b.size {
		b.handOff()
	}
	return nil
}

// Flush writes everything buffered and waits until it is written.
func (b *bgWriter) Flush() error {
	if len(b.buf) > 0 {
		b.handOff()
	}
	b.wg.Wait()
	return b.error()
}

// Discard drops what is buffered and not yet handed off, waits until the
// buffers handed off are written (then the file may be truncated), and
// forgets a write error, as bufio.Writer.Reset does.
func (b *bgWriter) Discard() {
	b.buf = b.buf[:0]
	b.wg.Wait()
	b.mu.Lock()
	b.err = nil
	b.mu.Unlock()
}

// Close flushes and stops the writer's goroutine; the writer is not used
// after.
func (b *bgWriter) Close() error {
	err := b.Flush()
	close(b.full)
	<-b.done
	return err
}
