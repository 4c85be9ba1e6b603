package main

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// Transparent huge pages for the heap. A run's heap grows to tens of MiB
// within its first second, and under the kernel's usual THP setting
// ("madvise": huge pages only where a program asks for them) every 4 KiB of
// it is a page fault when first touched and a page to free when the
// process ends: at a third of the typed benchmark's size 15,000-16,000
// faults, a third of the run's system time, and 5-7 ms between the
// process's exit and its parent seeing it (the kernel frees 100 MB of 4 KiB
// pages in that time, 2 MiB ones in under 1 ms). The Go runtime maps its
// heap without asking for huge pages, so denorm asks, over heapHuge bytes
// of heap: it makes the runtime map them by allocating them (fresh memory:
// neither zeroed nor touched, so no page is faulted) and advises the range
// MADV_HUGEPAGE before dropping them. The first collection frees the range,
// and the heap's later faults in it get huge pages. A heap that grows past
// it gets ordinary pages there; a kernel with THP off ignores the advice.
// GODEBUG=disablethp=1, the runtime's own switch for huge pages, and a
// GOGC of the user's (tuneGC) leave the heap as the runtime maps it.

// heapHuge is the size of the heap range advised: migrate's memory limit.
const heapHuge = memoryLimit

// madvHugepage and madvNohugepage are MADV_HUGEPAGE and MADV_NOHUGEPAGE
// (14 and 15 on every Linux architecture).
const (
	madvHugepage   = 14
	madvNohugepage = 15
)

// hugeStart and hugeEnd are the range adviseHugeHeap advised.
var hugeStart, hugeEnd uintptr

// hugePage aligns the range: the size of a transparent huge page on
// x86-64 (and of arm64's with 4 KiB pages).
const hugePage = 2 << 20

// adviseHugeHeap advises heapHuge bytes of heap for huge pages and returns
// the range advised (0, 0 where it did not).
func adviseHugeHeap() (start, end uintptr) {
	if strings.Contains(os.Getenv("GODEBUG"), "disablethp=1") {
		return 0, 0
	}
	b := make([]byte, heapHuge)
	p := uintptr(unsafe.Pointer(&b[0]))
	start = (p + hugePage - 1) &^ (hugePage - 1)
	end = (p + heapHuge) &^ (hugePage - 1)
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvHugepage)
	runtime.KeepAlive(b) // mapped until advised
	if errno != 0 {
		return 0, 0 // a kernel without THP (EINVAL): nothing advised
	}
	hugeStart, hugeEnd = start, end
	return start, end
}

// unadviseHugeHeap takes the advice back (MADV_NOHUGEPAGE), for verify:
// it gained no time from huge pages (2.894 -> 2.885 s at 500,000 wide
// orders), which raise a heap's peak RSS by 5-10 MB (100,000 orders,
// medians of 5: migrate 99 -> 104 MB, verify 95 -> 101), and verify is
// held to migrate's peak. Pages already huge stay so; later faults get
// small ones.
func unadviseHugeHeap() {
	if hugeEnd == 0 {
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, hugeStart, hugeEnd-hugeStart, madvNohugepage)
}
