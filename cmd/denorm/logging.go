package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/denorm/denorm/mappings"
)

// Every message denorm writes to stderr goes through one slog.Logger, in
// the style --log-format picks: text ("denorm: message key=value", with
// "warning: " or "error: " before warnings and errors) or json (one JSON
// object a line: time, level, msg and the attributes). Progress lines,
// the final error and a mapping file's problems are records too, so in
// json mode every stderr line parses as JSON.

// Log formats (--log-format).
const (
	logText = "text"
	logJSON = "json"
)

// newLogger is the logger of format at level, writing to w.
func newLogger(w io.Writer, format string, level slog.Level) *slog.Logger {
	if format == logJSON {
		return slog.New(slog.NewJSONHandler(&lockedWriter{w: w}, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(&textHandler{out: &lockedWriter{w: w}, level: level})
}

// lockedWriter makes one Write at a time: records and progress lines
// written from several goroutines never interleave within a line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// textHandler writes "denorm: [warning: |error: ]message key=value ...",
// one record a line; a message of several lines keeps its line breaks
// (resume hints), its attributes going on the first line.
type textHandler struct {
	out   io.Writer
	level slog.Level
	attrs []slog.Attr
	group string
}

func (h *textHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	b.WriteString("denorm: ")
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	case r.Level < slog.LevelInfo:
		b.WriteString("debug: ")
	}
	first, rest, multi := strings.Cut(r.Message, "\n")
	b.WriteString(first)
	write := func(a slog.Attr) bool {
		if a.Equal(slog.Attr{}) {
			return true
		}
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		b.WriteString(" " + key + "=" + textValue(a.Value))
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	if multi {
		b.WriteString("\n" + rest)
	}
	b.WriteByte('\n')
	_, err := h.out.Write(b.Bytes())
	return err
}

// textValue quotes a value holding blanks, quotes or control characters.
func textValue(v slog.Value) string {
	v = v.Resolve()
	var s string
	switch v.Kind() {
	case slog.KindDuration:
		s = v.Duration().Round(time.Millisecond).String()
	case slog.KindTime:
		s = v.Time().Format(time.RFC3339)
	default:
		s = v.String()
	}
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

func (h *textHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *textHandler) WithGroup(name string) slog.Handler {
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}

// logger is g's logger; before the command line was read (a flag it
// could not parse) it is a text logger at the info level.
func (g *globals) logger() *slog.Logger {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.log == nil {
		g.log = newLogger(g.stderr, g.logFormat, slog.LevelInfo)
	}
	return g.log
}

// setLogger builds g's logger from the flags.
func (g *globals) setLogger() error {
	if g.verbose && g.quiet {
		return usageError{errors.New("--verbose and --quiet exclude each other")}
	}
	switch g.logFormat {
	case logText, logJSON:
	default:
		return usageError{fmt.Errorf("--log-format must be text or json, not %q", g.logFormat)}
	}
	level := slog.LevelInfo
	if g.verbose {
		level = slog.LevelDebug
	}
	if g.quiet {
		level = slog.LevelWarn
	}
	g.mu.Lock()
	g.log = newLogger(g.stderr, g.logFormat, level)
	g.mu.Unlock()
	return nil
}

// fail writes the error that ends the command, with a hint when there is
// one: as one error record, or, for a mapping file's problems, one
// record per problem (in text mode, the problems' own file:line:col
// lines).
func (g *globals) fail(err error, hint string) {
	log := g.logger()
	if ps, ok := problemsOf(err); ok {
		if g.logFormat != logJSON {
			fmt.Fprintln(g.stderr, err)
			return
		}
		for _, p := range ps {
			log.Error(p.Msg, "file", p.File, "line", p.Pos.Line, "col", p.Pos.Col)
		}
		return
	}
	msg := err.Error()
	if hint != "" {
		if g.logFormat == logJSON {
			log.Error(msg, "hint", hint)
			return
		}
		msg += "\n" + hint
	}
	if g.logFormat == logJSON {
		log.Error(msg)
		return
	}
	// The error is the command's last word: "denorm: <error>", without a
	// level, as it always was.
	fmt.Fprintf(g.stderr, "denorm: %s\n", msg)
}

func problemsOf(err error) (mappings.Problems, bool) {
	var ps mappings.Problems
	ok := errors.As(err, &ps)
	return ps, ok
}
