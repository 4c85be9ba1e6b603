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

// tuneGC applies denorm's collector settings unless GOGC is set, and asks
// for huge pages over the heap's first arenas (thp_linux.go).
func tuneGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(gcPercent)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
		limitTuned = true
	}
	adviseHugeHeap()
}

// verifyGCPercent is verify's GOGC. verify's live heap is larger than
// migrate's (its sorts' buffers, the expected documents' batches, the
// target's lines being read: 21-22 MiB on the wide benchmark, where
// migrate's is 7-15 since it keeps fewer rows in flight), so at migrate's
// 400 its heap grew to the memory limit and its peak RSS passed
// migrate's (117 MB against 99-108 at 300,000 orders). At 200 the heap
// grows to three times the live heap (peak RSS 96 MB) for 1-3% more
// time; with full sorts (documents out of order) the limit caps it.
const verifyGCPercent = 200

// verifyLimitBase is verify's memory limit less its sorts' buffers
// (--sort-memory each, four: expected, found, the pairs settled where
// they met, references). verify builds the documents as migrate does and
// holds what its sorts buffer besides. At the default 16 MiB a sort, the
// limit is 104 MiB, below migrate's 120: the sorts of documents that
// arrive in key order buffer 1 MiB and stream the rest
// (internal/extsort), and the pairs keep most documents out of the
// sorts, so that the heap stays far below the limit (verifyGCPercent
// sets it) unless documents come out of order. A user's larger
// --sort-memory raises the limit with it, so that full sorts never hold
// the heap above the limit (the collector would then run without end); a
// smaller one lowers it to verifyLimitMin at most, which leaves documents
// larger than the wide benchmark's room.
const (
	verifyLimitBase = 40 << 20
	verifyLimitMin  = 80 << 20
)

// tuneVerifyGC sets verify's collector percentage and memory limit,
// where tuneGC set migrate's.
func tuneVerifyGC(sortMemMiB int) {
	unadviseHugeHeap()
	if !limitTuned {
		return
	}
	debug.SetGCPercent(verifyGCPercent)
	debug.SetMemoryLimit(max(verifyLimitBase+4*int64(sortMemMiB)<<20, verifyLimitMin))
}
