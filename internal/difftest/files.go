package difftest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Files is a case as the harness runs it and as testdata/difftest/<name>/
// keeps it: schema.sql, data.sql, mapping.yaml and case.json.
type Files struct {
	Schema  string
	Data    string
	Mapping string
	Meta    Meta
}

// Meta is case.json: how to run the case and what it must give.
type Meta struct {
	Seed      uint64   `json:"seed"`
	Ferret    bool     `json:"ferret"`
	BatchSize int      `json:"batchSize"`
	Workers   int      `json:"workers"`
	Role      bool     `json:"role,omitempty"`
	Checks    []Check  `json:"checks,omitempty"`
	Notes     []string `json:"notes,omitempty"`
	Expect    *Expect  `json:"expect,omitempty"`
}

// Expect is what a committed case must end with.
type Expect struct {
	// Outcome is "exact" (every check passes), "refused" (validate or
	// migrate exit 2) or "rejected" (exit 3, rows in the reject file):
	// the outcome the fix gave.
	Outcome string `json:"outcome"`
	// Message, if set, must appear in the refusal or in a reject's
	// reason.
	Message string `json:"message,omitempty"`
	// Open names a class of issue 25 that another change fixes: until it
	// lands the case fails, and the replay skips it saying so.
	Open string `json:"open,omitempty"`
	// Found says what the case found, for the reader.
	Found string `json:"found,omitempty"`
}

// Files renders the case.
func (c *Case) Files() *Files {
	return &Files{
		Schema:  c.SchemaSQL(),
		Data:    c.DataSQL(),
		Mapping: c.Mapping.YAML(),
		Meta: Meta{Seed: c.Seed, Ferret: c.Ferret, BatchSize: c.BatchSize, Workers: c.Workers, Role: c.Role,
			Checks: c.Checks, Notes: c.sortedNotes()},
	}
}

// Write writes the files into dir (created).
func (f *Files) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	meta, err := json.MarshalIndent(f.Meta, "", "  ")
	if err != nil {
		return err
	}
	for name, body := range map[string]string{"schema.sql": f.Schema, "data.sql": f.Data, "mapping.yaml": f.Mapping, "case.json": string(meta) + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Read reads the files of a case directory.
func Read(dir string) (*Files, error) {
	f := &Files{}
	for name, dst := range map[string]*string{"schema.sql": &f.Schema, "data.sql": &f.Data, "mapping.yaml": &f.Mapping} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		*dst = string(b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "case.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &f.Meta); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "case.json"), err)
	}
	return f, nil
}
