// Package layering holds the tests of denorm's import rules (STYLE.md §1):
// the database drivers are imported by one layer each. It has no code.
package layering
