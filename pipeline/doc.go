// Package pipeline runs a migration: it streams batches from extract,
// builds documents with transform and writes them to a load.Target, in
// three stages joined by bounded channels, so memory is bounded by
// (stages + queue depth) x batch size whatever the table size.
package pipeline
