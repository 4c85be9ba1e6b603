package main

import (
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/term"
)

// console is stderr as every writer of the command shares it: log
// records, status lines and the progress bar (drawn by progressbar,
// through bars()). The bar is a line without a line break, redrawn in
// place; anything else written while it is drawn first erases the bar's
// line, is written, and the bar's last frame is written again below it,
// so that no record is ever glued to a bar and no bar is left half
// overwritten.
type console struct {
	mu  sync.Mutex
	w   io.Writer
	bar string // the bar's last frame as drawn, "" when none is
}

// eraseLine goes back to the start of the line and erases it (ANSI EL).
const eraseLine = "\r\x1b[K"

// newConsole is w as a console: w itself when it is one.
func newConsole(w io.Writer) *console {
	if c, ok := w.(*console); ok {
		return c
	}
	return &console{w: w}
}

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bar == "" {
		return c.w.Write(p)
	}
	_, _ = io.WriteString(c.w, eraseLine)
	n, err := c.w.Write(p)
	if len(p) > 0 && p[len(p)-1] != '\n' {
		_, _ = io.WriteString(c.w, "\n")
	}
	_, _ = io.WriteString(c.w, c.bar)
	return n, err
}

// barWriter is the writer the progress bar (progressbar) draws
// through: each write is one frame of the bar ("\r", the line, ESC[0K),
// written as it is and kept to be drawn again below a record.
type barWriter struct{ c *console }

func (b barWriter) Write(p []byte) (int, error) {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.w.Write(p)
	c.bar = string(p)
	return n, err
}

// bars is the writer to give the progress bar.
func (c *console) bars() io.Writer { return barWriter{c} }

// keep ends the bar's line as it was last drawn: it stays on the screen
// and what follows is written below it.
func (c *console) keep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bar != "" {
		_, _ = io.WriteString(c.w, "\n")
	}
	c.bar = ""
}

// terminal is the file of the terminal the console writes to, if it is
// one.
func (c *console) terminal() (*os.File, bool) {
	f, ok := c.w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, false
	}
	return f, true
}

// width is the terminal's width in columns: the terminal's own, else
// $COLUMNS, else 80.
func (c *console) width() int {
	if f, ok := c.terminal(); ok {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}
