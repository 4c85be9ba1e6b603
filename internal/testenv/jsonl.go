package testenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Canonical rewrites one JSON document so that two documents compare equal
// exactly when they have the same keys in the same order and equal values,
// numbers compared by value (1 and 1.0 are equal).
func Canonical(doc string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var b bytes.Buffer
	if err := canon(dec, &b); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("trailing data after the document")
	}
	return b.String(), nil
}

func canon(dec *json.Decoder, b *bytes.Buffer) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch x := tok.(type) {
	case json.Delim:
		switch x {
		case '{':
			b.WriteByte('{')
			for i := 0; dec.More(); i++ {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if i > 0 {
					b.WriteByte(',')
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteByte(':')
				if err := canon(dec, b); err != nil {
					return err
				}
			}
			b.WriteByte('}')
		case '[':
			b.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := canon(dec, b); err != nil {
					return err
				}
			}
			b.WriteByte(']')
		}
		_, err := dec.Token() // closing delimiter
		return err
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return err
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	default:
		v, _ := json.Marshal(x)
		b.Write(v)
	}
	return nil
}

// ReadLines reads a JSON Lines file (empty lines ignored).
func ReadLines(t testing.TB, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// EqualDocs fails the test when the two lists of JSON documents differ
// (order of documents and of keys matters; numbers compare by value).
func EqualDocs(t testing.TB, what string, want, got []string) {
	t.Helper()
	cw, cg := canonAll(t, want), canonAll(t, got)
	if d := cmp.Diff(cw, cg); d != "" {
		t.Errorf("%s: documents differ (-want +got):\n%s", what, d)
	}
}

func canonAll(t testing.TB, docs []string) []string {
	t.Helper()
	out := make([]string, len(docs))
	for i, d := range docs {
		c, err := Canonical(d)
		if err != nil {
			t.Fatalf("not JSON: %v: %s", err, d)
		}
		out[i] = c
	}
	return out
}
