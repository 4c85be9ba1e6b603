package difftest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Node is a mapping file as an ordered tree: a map (Keys and Items), a
// list (Items) or a scalar (Value). The shrinker removes list items and
// map entries from it; YAML writes it.
type Node struct {
	Keys  []string // map keys; nil for a list or a scalar
	Items []*Node  // map values (parallel to Keys) or list items
	List  bool
	// Value is a scalar: string, int, int64, float64 or bool; Raw, when
	// set, is written as it is instead (hostile YAML such as .nan).
	Value any
	Raw   string
}

// M is a map node from key, value pairs; a nil value leaves its key out.
func M(kv ...any) *Node {
	n := &Node{Keys: []string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		v := node(kv[i+1])
		if v == nil {
			continue
		}
		n.Keys = append(n.Keys, kv[i].(string))
		n.Items = append(n.Items, v)
	}
	return n
}

// L is a list node.
func L(items ...any) *Node {
	n := &Node{List: true}
	for _, it := range items {
		if v := node(it); v != nil {
			n.Items = append(n.Items, v)
		}
	}
	return n
}

func node(v any) *Node {
	switch x := v.(type) {
	case nil:
		return nil
	case *Node:
		return x
	case []string:
		if len(x) == 1 {
			return &Node{Value: x[0]}
		}
		n := &Node{List: true}
		for _, s := range x {
			n.Items = append(n.Items, &Node{Value: s})
		}
		return n
	default:
		return &Node{Value: v}
	}
}

// Set sets (or adds) key to v in a map node.
func (n *Node) Set(key string, v any) {
	for i, k := range n.Keys {
		if k == key {
			n.Items[i] = node(v)
			return
		}
	}
	n.Keys = append(n.Keys, key)
	n.Items = append(n.Items, node(v))
}

// Get is the value of key in a map node, or nil.
func (n *Node) Get(key string) *Node {
	if n == nil {
		return nil
	}
	for i, k := range n.Keys {
		if k == key {
			return n.Items[i]
		}
	}
	return nil
}

// Str is a scalar's text ("" for other nodes).
func (n *Node) Str() string {
	if n == nil || n.Value == nil {
		return ""
	}
	if s, ok := n.Value.(string); ok {
		return s
	}
	return fmt.Sprint(n.Value)
}

func (n *Node) isMap() bool { return n.Keys != nil }

// Clone is a deep copy.
func (n *Node) Clone() *Node {
	if n == nil {
		return nil
	}
	c := &Node{List: n.List, Value: n.Value, Raw: n.Raw}
	if n.Keys != nil {
		c.Keys = append([]string{}, n.Keys...)
	}
	for _, it := range n.Items {
		c.Items = append(c.Items, it.Clone())
	}
	return c
}

// YAML writes the tree as a YAML document in block style, every string
// double-quoted (JSON's escapes are YAML's).
func (n *Node) YAML() string {
	var b strings.Builder
	n.write(&b, 0, false)
	return b.String()
}

func scalar(v any, raw string) string {
	if raw != "" {
		return raw
	}
	switch x := v.(type) {
	case string:
		s, _ := jsonString(x)
		return s
	case float64:
		return fmt.Sprintf("%g", x)
	default:
		return fmt.Sprint(x)
	}
}

func jsonString(s string) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// write writes n at indent; inline says the caller already wrote the
// line's start ("- " or "key: ").
func (n *Node) write(b *strings.Builder, indent int, inline bool) {
	pad := strings.Repeat("  ", indent)
	switch {
	case n.isMap():
		if len(n.Keys) == 0 {
			b.WriteString("{}\n")
			return
		}
		for i, k := range n.Keys {
			if i > 0 || !inline {
				b.WriteString(pad)
			}
			ks, _ := jsonString(k)
			b.WriteString(ks + ":")
			n.Items[i].writeValue(b, indent+1)
		}
	case n.List:
		if len(n.Items) == 0 {
			b.WriteString("[]\n")
			return
		}
		for i, it := range n.Items {
			if i > 0 || !inline {
				b.WriteString(pad)
			}
			b.WriteString("- ")
			switch {
			case it.isMap() && len(it.Keys) > 0:
				it.write(b, indent+1, true)
			case !it.isMap() && !it.List:
				b.WriteString(scalar(it.Value, it.Raw) + "\n")
			default:
				it.writeValue(b, indent+1)
			}
		}
	default:
		b.WriteString(scalar(n.Value, n.Raw) + "\n")
	}
}

// writeValue writes n after "key:" or "- ".
func (n *Node) writeValue(b *strings.Builder, indent int) {
	switch {
	case n.isMap() && len(n.Keys) > 0:
		b.WriteString("\n")
		n.write(b, indent, false)
	case n.List && len(n.Items) > 0:
		b.WriteString("\n")
		n.write(b, indent, false)
	case n.isMap():
		b.WriteString(" {}\n")
	case n.List:
		b.WriteString(" []\n")
	default:
		b.WriteString(" " + scalar(n.Value, n.Raw) + "\n")
	}
}
