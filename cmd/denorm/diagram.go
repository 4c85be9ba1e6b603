package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/denorm/denorm/extract"
	"github.com/denorm/denorm/mappings"
	"github.com/denorm/denorm/transform/report"
)

// writeAdviseDiagram draws the drafted mapping's document model
// (advise --diagram): resolved against the snapshot's catalog as plan
// resolves it, written as a self-contained HTML page, or as a standalone
// SVG file when path ends in .svg. The draft builds no documents, so the
// diagram has no sizes: plan --format html draws the same model with them.
func writeAdviseDiagram(ctx context.Context, snap *extract.Snapshot, schema, text, path string) error {
	f, err := mappings.Parse("advised.yaml", []byte(text))
	if err != nil {
		return fmt.Errorf("advise --diagram: the draft: %w", err)
	}
	cat, err := extract.ReadCatalog(ctx, snap, f.Tables())
	if err != nil {
		return err
	}
	plan, err := mappings.Resolve(f, cat)
	if err != nil {
		return fmt.Errorf("advise --diagram: the draft: %w", err)
	}
	m := report.ModelOf(plan)
	var b bytes.Buffer
	if strings.HasSuffix(strings.ToLower(path), ".svg") {
		err = report.WriteModelSVG(&b, m)
	} else {
		err = report.WriteModelPage(&b, "denorm advise: the drafted model of schema "+schema,
			"The collections the draft writes, with what they embed, their references and id arrays (arrows), indexed fields (key) and shard keys (diamond). No sizes yet: denorm plan --format html draws the same model with the documents' sizes and items per array.", m)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("advise --diagram: %w", err)
	}
	return nil
}
