// Package layering holds no code: its test checks the import rules of
// README.md's "Architecture" section over every package of the module —
// the layers import downwards only (cmd -> pipeline -> job -> extract/load -> transform ->
// mappings; a package under a layer's directory, such as transform/report
// or mappings/advise, is of that layer), only extract imports the
// PostgreSQL driver, only load the MongoDB driver, and transform (with
// transform/report) does no I/O — so a change that breaks them fails the
// suite.
package layering
