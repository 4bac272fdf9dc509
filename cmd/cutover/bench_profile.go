//go:build ignore

package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
)

// benchProfile names the pprof files a bench run writes (issue 7: profile
// the hot paths and keep before/after figures).
type benchProfile struct{ cpu, mem string }

// profileFlags takes --cpuprofile FILE and --memprofile FILE (or =FILE)
// from the front of args, before the suite's name.
func profileFlags(args []string) ([]string, benchProfile, error) {
	var p benchProfile
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		name, val, eq := strings.Cut(args[0], "=")
		var dst *string
		switch name {
		case "--cpuprofile":
			dst = &p.cpu
		case "--memprofile":
			dst = &p.mem
		default:
			return args, p, nil
		}
		args = args[1:]
		if !eq {
			if len(args) == 0 || strings.HasPrefix(args[0], "-") {
				return nil, p, fmt.Errorf("%w: %s needs a file name", errUsage, name)
			}
			val, args = args[0], args[1:]
		}
		if val == "" {
			return nil, p, fmt.Errorf("%w: %s needs a file name", errUsage, name)
		}
		*dst = val
	}
	return args, p, nil
}

// cpuRun is the CPU profile in progress; see profileMeasured.
var cpuRun struct {
	sync.Mutex
	path     string
	buf      *bytes.Buffer // the set-up phase, discarded once a suite marks its measured phase
	file     *os.File      // the measured phase's profile, once marked
	measured bool
}

// profileMeasured marks the start of a suite's measured phase: the CPU
// profile restarts there, so seeding and set-up do not drown the hot paths
// of what the suite measures. A suite that never calls it is profiled whole.
func profileMeasured() {
	cpuRun.Lock()
	defer cpuRun.Unlock()
	if cpuRun.path == "" || cpuRun.measured {
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

// start begins CPU profiling (if asked) into memory; stop ends it and
// writes the CPU profile (the measured phase, or the whole run) and the
// heap profile (if asked).
func (p benchProfile) start() (stop func() error, err error) {
	if p.cpu != "" {
		f, err := os.Create(p.cpu) // fail early on a bad path
		if err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		f.Close()
		cpuRun.Lock()
		cpuRun.path, cpuRun.buf, cpuRun.measured = p.cpu, &bytes.Buffer{}, false
		cpuRun.Unlock()
		if err := pprof.StartCPUProfile(cpuRun.buf); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	return func() error {
		if p.cpu != "" {
			cpuRun.Lock()
			pprof.StopCPUProfile()
			buf, file, measured := cpuRun.buf, cpuRun.file, cpuRun.measured
			cpuRun.path, cpuRun.file = "", nil
			cpuRun.Unlock()
			if measured {
				if err := file.Close(); err != nil {
					return err
				}
			} else if err := os.WriteFile(p.cpu, buf.Bytes(), 0o644); err != nil {
				return err
			}
		}
		if p.mem != "" {
			f, err := os.Create(p.mem)
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
