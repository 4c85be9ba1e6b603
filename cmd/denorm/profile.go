package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// startProfile writes a CPU profile of the whole run to the file named by
// DENORM_CPUPROFILE, the allocations of the whole run to the file named by
// DENORM_MEMPROFILE and an execution trace (go tool trace: where goroutines
// wait) to the file named by DENORM_TRACE, when set: how the pipeline's hot
// spots are found (see the README's Performance section). The returned
// function stops them.
func startProfile() func() {
	stopCPU := func() {}
	if path := os.Getenv("DENORM_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "denorm: DENORM_CPUPROFILE: %v\n", err)
		} else {
			stopCPU = func() {
				pprof.StopCPUProfile()
				f.Close()
			}
		}
	}
	stopTrace := func() {}
	if path := os.Getenv("DENORM_TRACE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = trace.Start(f)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "denorm: DENORM_TRACE: %v\n", err)
		} else {
			stopTrace = func() {
				trace.Stop()
				f.Close()
			}
		}
	}
	memPath := os.Getenv("DENORM_MEMPROFILE")
	if memPath != "" {
		runtime.MemProfileRate = 64 << 10
	}
	return func() {
		stopCPU()
		stopTrace()
		if memPath == "" {
			return
		}
		f, err := os.Create(memPath)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "denorm: DENORM_MEMPROFILE: %v\n", err)
		}
	}
}
