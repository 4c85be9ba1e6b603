//go:build !unix

package main

// ignoreFileSizeSignal has nothing to do where there is no SIGXFSZ.
func ignoreFileSizeSignal() {}
