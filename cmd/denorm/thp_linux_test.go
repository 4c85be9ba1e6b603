package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// smapsVMA is the /proc/self/smaps entry of the mapping holding addr:
// its VmFlags and its AnonHugePages in KiB.
func smapsVMA(addr uintptr) (flags []string, hugeKiB int64, found bool, err error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, 0, false, err
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
				return flags, hugeKiB, true, nil // the next mapping
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
	return flags, hugeKiB, in, sc.Err()
}

func init() { testChildren["hugeheap"] = hugeHeapChild }

// hugeHeapChild is TestAdviseHugeHeap's check, in a process of its own
// as denorm's main makes it: the range advised is heap memory marked for
// huge pages (VmFlags "hg"), and memory the heap then gives out there and
// a program touches is backed by huge pages where the kernel has them on.
func hugeHeapChild() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return 1
	}
	start, end := adviseHugeHeap()
	if start == 0 || end-start < heapHuge-2*hugePage {
		return fail("advised %#x-%#x, want %d MiB", start, end, heapHuge>>20)
	}
	flags, _, ok, err := smapsVMA(start)
	switch {
	case err != nil:
		return fail("smaps: %v", err)
	case !ok:
		return fail("no mapping holds the advised address %#x", start)
	case !slices.Contains(flags, "hg"):
		return fail("mapping at %#x: VmFlags %v, want hg (MADV_HUGEPAGE)", start, flags)
	}
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(thp), "[never]") {
		fmt.Printf("transparent huge pages off on this machine (%q, %v): only the advice checked\n", thp, err)
		return 0
	}
	// The dropped range is free once collected, and most of this young
	// heap: the page allocator gives its lowest free addresses out first.
	runtime.GC()
	var held [][]byte
	in := 0
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
		in++
		if _, huge, _, err := smapsVMA(p); err != nil {
			return fail("smaps: %v", err)
		} else if huge > 0 {
			fmt.Printf("%d KiB of huge pages in the mapping at %#x\n", huge, p)
			// verify's taking the advice back: the range is marked nh.
			unadviseHugeHeap()
			flags, _, _, err := smapsVMA(start)
			if err != nil || !slices.Contains(flags, "nh") || slices.Contains(flags, "hg") {
				return fail("after unadviseHugeHeap the mapping at %#x has VmFlags %v (%v), want nh and no hg", start, flags, err)
			}
			return 0
		}
	}
	return fail("64 MiB touched, %d of 8 MiB slices in the advised range %#x-%#x, no huge page among them (THP %q)", in, start, end, thp)
}

// TestAdviseHugeHeap runs hugeHeapChild in a new process of the test
// binary: in this one, the tests before have mapped and touched heap
// that the advised range may reuse.
func TestAdviseHugeHeap(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DENORM_TEST_CHILD=hugeheap",
		"GODEBUG="+strings.ReplaceAll(os.Getenv("GODEBUG"), "disablethp=1", ""))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}

// TestAdviseHugeHeapOff: GODEBUG=disablethp=1, the runtime's own switch,
// leaves the heap alone.
func TestAdviseHugeHeapOff(t *testing.T) {
	t.Setenv("GODEBUG", "disablethp=1")
	if start, end := adviseHugeHeap(); start != 0 || end != 0 {
		t.Fatalf("advised %#x-%#x with GODEBUG=disablethp=1", start, end)
	}
}
