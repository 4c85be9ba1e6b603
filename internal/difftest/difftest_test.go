package difftest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestGenerateReplays: one seed gives the same case, file for file, every
// time (what DENORM_DIFFTEST_SEED relies on), and different seeds give
// different cases.
func TestGenerateReplays(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		a, b := Generate(seed, Config{}).Files(), Generate(seed, Config{}).Files()
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d drew two different cases", seed)
		}
	}
	if reflect.DeepEqual(Generate(1, Config{}).Files(), Generate(2, Config{}).Files()) {
		t.Error("seeds 1 and 2 drew the same case")
	}
}

// TestMappingIsYAML: every drawn mapping is one YAML document of the
// mapping's shape (version 1, collections), and the hostile constants
// of the open class yamlconst are written as YAML reads them.
func TestMappingIsYAML(t *testing.T) {
	cfg := Config{Open: map[string]bool{}}
	for c := range Classes {
		cfg.Open[c] = true
	}
	for seed := uint64(1); seed <= 300; seed++ {
		for _, cf := range []Config{{}, cfg} {
			m := Generate(seed, cf).Mapping.YAML()
			var v struct {
				Version     int              `yaml:"version"`
				Collections []map[string]any `yaml:"collections"`
			}
			if err := yaml.Unmarshal([]byte(m), &v); err != nil {
				t.Fatalf("seed %d: %v\n%s", seed, err, m)
			}
			if v.Version != 1 || len(v.Collections) == 0 {
				t.Fatalf("seed %d: version %d, %d collections\n%s", seed, v.Version, len(v.Collections), m)
			}
		}
	}
}

// TestClassesOff: with no open class, the generator draws none of their
// tell-tale values (sub-millisecond timestamps, lower bounds, infinite
// keys, numerics below a double's range).
func TestClassesOff(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		c := Generate(seed, Config{})
		f := c.Files()
		for _, bad := range []string{"1e-991", "-1e-400", "[5:", "[-2:", "INHERITS", "ROW LEVEL SECURITY"} {
			if strings.Contains(f.Data+f.Schema, bad) {
				t.Errorf("seed %d draws %q with every class off", seed, bad)
			}
		}
	}
}

// TestShrink: the shrinker keeps what the failure needs and drops the
// rest - here a failure that needs one table holding one given value.
func TestShrink(t *testing.T) {
	var c *Case
	for seed := uint64(1); ; seed++ {
		c = Generate(seed, Config{})
		if len(c.Tables) >= 3 && strings.Contains(c.DataSQL(), "'NaN'") {
			break
		}
	}
	fails := func(x *Case) bool { return strings.Contains(x.DataSQL(), "'NaN'") }
	small := Shrink(c, fails, time.Now().Add(time.Minute))
	if !fails(small) {
		t.Fatal("the shrunk case does not fail")
	}
	rows := 0
	for _, tb := range small.Tables {
		rows += len(tb.Rows)
	}
	if len(small.Tables) != 1 || rows != 1 || small.Mapping.Get("collections") != nil {
		t.Errorf("shrunk to %d tables, %d rows, mapping:\n%s", len(small.Tables), rows, small.Mapping.YAML())
	}
}

// TestLookupsDefined: every field reading lookup.column sits in an entity
// that defines the lookup (a generator slip validate would refuse).
func TestLookupsDefined(t *testing.T) {
	var check func(seed uint64, n *Node)
	check = func(seed uint64, n *Node) {
		if n == nil {
			return
		}
		if n.isMap() {
			defined := map[string]bool{}
			if lk := n.Get("lookups"); lk != nil {
				for _, l := range lk.Items {
					defined[l.Get("name").Str()] = true
				}
			}
			if fs := n.Get("fields"); fs != nil {
				for _, f := range fs.Items {
					for _, k := range []string{"column", "key"} {
						// "a.b" is a column name with a dot (read as a lookup's: loud)
						if v := f.Get(k).Str(); strings.Contains(v, ".") && f.isMap() && !strings.HasPrefix(v, "a.b") {
							if name, _, _ := strings.Cut(v, "."); !defined[name] {
								t.Errorf("seed %d: field %s: %q reads lookup %q, not defined here", seed, k, v, name)
							}
						}
					}
				}
			}
		}
		for _, it := range n.Items {
			check(seed, it)
		}
	}
	for seed := uint64(1); seed <= 500; seed++ {
		check(seed, Generate(seed, Config{}).Mapping)
	}
}
