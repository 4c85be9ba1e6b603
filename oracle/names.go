package oracle

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// maxDepth is the deepest nesting MongoDB stores: the document is level
// 1, each embedded document or array one more.
const maxDepth = 100

// checkNames applies the README's rule on field names to a built document:
// a name may not be empty, start with "$", hold "." or NUL, or appear twice
// in one (sub)document, and nothing may nest deeper than maxDepth. It is
// written apart from transform's CheckKeys on purpose.
func checkNames(d bson.D, path string, depth int) error {
	if depth > maxDepth {
		return reject(path, "nested deeper than %d levels", maxDepth)
	}
	var seen map[string]bool
	if len(d) > 16 {
		seen = make(map[string]bool, len(d))
	}
	at := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	for i, e := range d {
		switch {
		case e.Key == "":
			return reject(at(e.Key), "an empty field name")
		case e.Key[0] == '$':
			return reject(at(e.Key), "a field name starting with \"$\"")
		case strings.ContainsRune(e.Key, '.'):
			return reject(at(e.Key), "a field name holding \".\"")
		case strings.ContainsRune(e.Key, 0):
			return reject(at(e.Key), "a field name holding NUL")
		case seen != nil && seen[e.Key], seen == nil && repeated(d[:i], e.Key):
			return reject(at(e.Key), "two fields of one document have this name")
		}
		if seen != nil {
			seen[e.Key] = true
		}
		switch e.Value.(type) {
		case bson.D, bson.A:
			if err := checkValueNames(e.Value, at(e.Key), depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// repeated reports whether a field of d is named k.
func repeated(d bson.D, k string) bool {
	for _, e := range d {
		if e.Key == k {
			return true
		}
	}
	return false
}

func checkValueNames(v any, path string, depth int) error {
	switch x := v.(type) {
	case bson.D:
		return checkNames(x, path, depth+1)
	case bson.A:
		if depth+1 > maxDepth {
			return reject(path, "nested deeper than %d levels", maxDepth)
		}
		for i, e := range x {
			if err := checkValueNames(e, path+"."+strconv.Itoa(i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// pivotName is the field name a pivot's value gives (README: a string as
// it is, an integer or decimal as its digits, a boolean as true/false, a
// date as RFC 3339 text in UTC); an empty or NULL value names nothing.
func pivotName(v any, path string) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", reject(path, "the field name comes from a NULL value")
	case string:
		if x == "" {
			return "", reject(path, "the field name comes from an empty string")
		}
		return x, nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case bool:
		return strconv.FormatBool(x), nil
	case bson.Decimal128:
		return x.String(), nil
	case bson.DateTime:
		return x.Time().UTC().Format("2006-01-02T15:04:05.999999999Z07:00"), nil
	}
	return "", reject(path, "a %s value cannot name a field", fmt.Sprintf("%T", v))
}
