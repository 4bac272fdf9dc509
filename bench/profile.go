package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"
)

// Profile names the pprof files a bench run writes (profile the
// hot paths and keep before/after figures) and the execution trace (where
// goroutines wait: go tool trace -pprof=sync|net|syscall|sched FILE);
// "" writes none.
type Profile struct{ CPU, Mem, Trace string }

// cpuRun is the CPU profile in progress (pprof's is per process); see
// profileMeasured.
var cpuRun struct {
	sync.Mutex
	path     string
	buf      *bytes.Buffer // the set-up phase, discarded once a suite marks its measured phase
	file     *os.File      // the measured phase's profile, once marked
	measured bool
	// trace is the execution trace's path; its file is rewritten when the
	// measured phase starts, like the CPU profile's.
	trace     string
	traceFile *os.File
}

// profileMeasured marks the start of a suite's measured phase: the CPU
// profile restarts there, so seeding and set-up do not drown the hot paths
// of what the suite measures. A suite that never calls it is profiled whole.
func profileMeasured() {
	cpuRun.Lock()
	defer cpuRun.Unlock()
	if cpuRun.traceFile != nil && !cpuRun.measured {
		trace.Stop()
		cpuRun.traceFile.Close()
		cpuRun.traceFile = nil
		if f, err := os.Create(cpuRun.trace); err == nil {
			if trace.Start(f) == nil {
				cpuRun.traceFile = f
			} else {
				f.Close()
			}
		}
	}
	if cpuRun.path == "" || cpuRun.measured {
		cpuRun.measured = true
		return
	}
	pprof.StopCPUProfile()
	f, err := os.Create(cpuRun.path)
	if err != nil {
		return // stop reports the file error
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return
	}
	cpuRun.buf, cpuRun.file, cpuRun.measured = nil, f, true
}

// Start begins CPU profiling (if asked) into memory; stop ends it and
// writes the CPU profile (the measured phase, or the whole run) and the
// heap profile (if asked). One profile runs at a time per process: the
// caller (one goroutine) runs the suite between Start and stop. Errors: a
// profile file that cannot be created or written.
func (p Profile) Start() (stop func() error, err error) {
	if p.CPU != "" {
		f, err := os.Create(p.CPU) // fail early on a bad path
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		f.Close()
		cpuRun.Lock()
		cpuRun.path, cpuRun.buf, cpuRun.measured = p.CPU, &bytes.Buffer{}, false
		cpuRun.Unlock()
		if err := pprof.StartCPUProfile(cpuRun.buf); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	if p.Trace != "" {
		f, err := os.Create(p.Trace)
		if err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("trace: %w", err)
		}
		cpuRun.Lock()
		cpuRun.trace, cpuRun.traceFile, cpuRun.measured = p.Trace, f, false
		cpuRun.Unlock()
	}
	return func() error {
		cpuRun.Lock()
		if cpuRun.traceFile != nil {
			trace.Stop()
			if err := cpuRun.traceFile.Close(); err != nil {
				cpuRun.Unlock()
				return fmt.Errorf("trace: %w", err)
			}
		} else if p.Trace != "" {
			cpuRun.Unlock()
			return fmt.Errorf("trace: %s could not be rewritten at the measured phase", p.Trace)
		}
		cpuRun.trace, cpuRun.traceFile = "", nil
		cpuRun.Unlock()
		if p.CPU != "" {
			cpuRun.Lock()
			pprof.StopCPUProfile()
			buf, file, measured := cpuRun.buf, cpuRun.file, cpuRun.measured
			cpuRun.path, cpuRun.file = "", nil
			cpuRun.Unlock()
			if measured {
				if err := file.Close(); err != nil {
					return err
				}
			} else if err := os.WriteFile(p.CPU, buf.Bytes(), 0o644); err != nil {
				return err
			}
		}
		if p.Mem != "" {
			f, err := os.Create(p.Mem)
			if err != nil {
				return fmt.Errorf("heap profile: %w", err)
			}
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				f.Close()
				return fmt.Errorf("heap profile: %w", err)
			}
			return f.Close()
		}
		return nil
	}, nil
}
