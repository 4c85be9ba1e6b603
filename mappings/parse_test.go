package mappings

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the expected messages of testdata/invalid")

// TestInvalidMappings parses every file of testdata/invalid and compares all
// problems reported with the paired .errors file, exactly.
func TestInvalidMappings(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid mappings found: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f)
			if err == nil {
				t.Fatal("parsed without problems")
			}
			if !IsProblems(err) {
				t.Fatalf("error is not a Problems list: %v", err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".errors"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if d := cmp.Diff(string(want), got); d != "" {
				t.Errorf("problems differ (-want +got):\n%s", d)
			}
		})
	}
}

// TestExamplesParse checks that every shipped example mapping is valid.
func TestExamplesParse(t *testing.T) {
	files, _ := filepath.Glob("examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestCamelCase(t *testing.T) {
	for in, want := range map[string]string{
		"first_name": "firstName", "id": "id", "mkt_cap": "mktCap", "a__b": "aB",
		"_x": "x", "zip": "zip", "url_2": "url2", "_": "_", "prix_été": "prixÉté", "recent_élans": "recentÉlans",
	} {
		if got := CamelCase(in); got != want {
			t.Errorf("CamelCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse feeds arbitrary bytes to the parser: it must never panic, and
// a failure must always be a Problems list with positions.
func FuzzParse(f *testing.F) {
	for _, p := range append(mustGlob("examples/*.yaml"), mustGlob("testdata/invalid/*.yaml")...) {
		data, err := os.ReadFile(p)
		if err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("fuzz.yaml", data)
		if err != nil && !IsProblems(err) {
			t.Fatalf("error is not a Problems list: %v", err)
		}
	})
}

func mustGlob(p string) []string {
	m, _ := filepath.Glob(p)
	return m
}
