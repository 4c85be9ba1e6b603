// Package layering holds no code: its test checks the import rules of
// STYLE.md §1 over every package of the module — the layers import
// downwards only (cmd -> pipeline -> extract/load -> transform ->
// mappings), only extract imports the PostgreSQL driver, only load the
// MongoDB driver, and transform does no I/O — so a change that breaks
// them fails the suite.
package layering
