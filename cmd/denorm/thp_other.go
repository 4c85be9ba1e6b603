//go:build !linux

package main

// adviseHugeHeap asks for huge pages on Linux only (thp_linux.go).
func adviseHugeHeap() (start, end uintptr) { return 0, 0 }

// unadviseHugeHeap is adviseHugeHeap's undoing, Linux only.
func unadviseHugeHeap() {}
