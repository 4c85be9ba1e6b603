package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// startProfile writes a CPU profile of the whole run to the file named by
// DENORM_CPUPROFILE, the allocations of the whole run to the file named by
// DENORM_MEMPROFILE and an execution trace (go tool trace: where goroutines
// wait) to the file named by DENORM_TRACE, when set: how the pipeline's hot
// spots are found (see docs/performance.md). The returned
// function stops them.
func startProfile() func() {
	stopCPU := recordTo("DENORM_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile)
	stopTrace := recordTo("DENORM_TRACE", trace.Start, trace.Stop)
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

// recordTo starts a recording into the file named by the environment
// variable env, when set, and returns the function that stops it.
func recordTo(env string, start func(io.Writer) error, stop func()) func() {
	path := os.Getenv(env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "denorm: %s: %v\n", env, err)
		return func() {}
	}
	return func() {
		stop()
		f.Close()
	}
}
