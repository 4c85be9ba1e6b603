//go:build unix

package main

import (
	"os/signal"
	"syscall"
)

// ignoreFileSizeSignal makes a write past the file size limit (ulimit -f)
// fail with EFBIG, which the directory target reports naming the file,
// instead of the kernel's SIGXFSZ ending the process without a word.
func ignoreFileSizeSignal() { signal.Ignore(syscall.SIGXFSZ) }
