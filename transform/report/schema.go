package report

import _ "embed"

// Schema is the JSON Schema of the JSON report (report.schema.json),
// published for tools that read plan's output.
//
//go:embed report.schema.json
var Schema []byte
