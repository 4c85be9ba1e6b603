package main

import (
	"os"
	"runtime/debug"
)

// denorm's garbage collector settings, used unless the environment sets
// GOGC (then GOGC and GOMEMLIMIT are left as the user gave them).
//
// A migration's live heap is small and flat (a few batches of rows and
// documents), while it allocates its data size several times over: with
// Go's default GOGC=100 the collector ran on a few MiB of growth and took
// a third of the wide benchmark's CPU. GOGC=400 lets the heap grow to
// five times the live heap between collections (wide migrate 19.1 s ->
// 13.7 s of CPU); the soft memory limit caps what that costs in memory,
// the collector working harder only when the heap nears it. A live heap
// above the limit (documents of many MiB in large batches) still works:
// the runtime then exceeds the limit rather than collect without end.
// At 192 MiB migrate's peak RSS was 153-160 MB on the wide orders; at 120
// MiB it is 115-140 MB for the same CPU time (issue 29: at most 150 MB),
// since the live heap is a few tens of MiB.
const (
	gcPercent   = 400
	memoryLimit = 120 << 20
)

// limitTuned is set when tuneGC set the memory limit (not the user's
// GOGC or GOMEMLIMIT, and not a test running commands in its process).
var limitTuned bool

// tuneGC applies denorm's collector settings unless GOGC is set.
func tuneGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(gcPercent)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
		limitTuned = true
	}
}

// verifyLimitBase is verify's memory limit less its two document sorts'
// buffers: verify builds the documents as migrate does and also holds
// both sorts' buffers (--sort-memory each) live for the whole run, so
// migrate's limit let its heap grow past migrate's by their size and
// more (the wide benchmark: 211 MB peak RSS against migrate's 146 MB).
// With the limit at this plus the sorts, its peak RSS is migrate's
// (146 MB both, issue 29) for about a tenth more collector work.
const verifyLimitBase = 96 << 20

// tuneVerifyGC sets verify's memory limit, where tuneGC set migrate's.
func tuneVerifyGC(sortMemMiB int) {
	if !limitTuned {
		return
	}
	debug.SetMemoryLimit(min(verifyLimitBase+2*int64(sortMemMiB)<<20, memoryLimit))
}
