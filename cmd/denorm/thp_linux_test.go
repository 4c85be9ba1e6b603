package main

import (
	"bufio"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// smapsVMA is the /proc/self/smaps entry of the mapping holding addr:
// its VmFlags and its AnonHugePages in KiB.
func smapsVMA(t *testing.T, addr uintptr) (flags []string, hugeKiB int64, found bool) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && len(fields) >= 5 && !strings.HasSuffix(fields[0], ":") {
			if in {
				return flags, hugeKiB, true // the next mapping
			}
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= a && uint64(addr) < b
			continue
		}
		if !in {
			continue
		}
		switch fields[0] {
		case "VmFlags:":
			flags = fields[1:]
		case "AnonHugePages:":
			hugeKiB, _ = strconv.ParseInt(fields[1], 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return flags, hugeKiB, in
}

// TestAdviseHugeHeap: the range advised is heap memory marked for huge
// pages (VmFlags "hg"), and memory the heap then gives out there and a
// program touches is backed by huge pages where the kernel has them on
// (enabled "always" or "madvise").
func TestAdviseHugeHeap(t *testing.T) {
	t.Setenv("GODEBUG", strings.ReplaceAll(os.Getenv("GODEBUG"), "disablethp=1", ""))
	start, end := adviseHugeHeap()
	if start == 0 || end-start < heapHuge-2*hugePage {
		t.Fatalf("advised %#x-%#x, want %d MiB", start, end, heapHuge>>20)
	}
	flags, _, ok := smapsVMA(t, start)
	if !ok {
		t.Fatalf("no mapping holds the advised address %#x", start)
	}
	if !slices.Contains(flags, "hg") {
		t.Fatalf("mapping at %#x: VmFlags %v, want hg (MADV_HUGEPAGE)", start, flags)
	}
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(thp), "[never]") {
		t.Logf("transparent huge pages off on this machine (%q, %v): only the advice checked", thp, err)
		return
	}
	// The dropped range is free once collected; a large slice comes from
	// it (the page allocator takes the lowest free addresses, and the
	// range is most of the heap).
	runtime.GC()
	var held [][]byte
	for range 8 {
		b := make([]byte, 8<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
		p := uintptr(unsafe.Pointer(&b[0]))
		if p < start || p+uintptr(len(b)) > end {
			continue
		}
		if _, huge, _ := smapsVMA(t, p); huge > 0 {
			return
		}
	}
	t.Fatalf("64 MiB touched in the advised range %#x-%#x, no huge page among it (THP %q)", start, end, thp)
}

// TestAdviseHugeHeapOff: GODEBUG=disablethp=1, the runtime's own switch,
// leaves the heap alone.
func TestAdviseHugeHeapOff(t *testing.T) {
	t.Setenv("GODEBUG", "disablethp=1")
	if start, end := adviseHugeHeap(); start != 0 || end != 0 {
		t.Fatalf("advised %#x-%#x with GODEBUG=disablethp=1", start, end)
	}
}
