package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
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

// start begins CPU profiling (if asked); stop ends it and writes the heap
// profile (if asked).
func (p benchProfile) start() (stop func() error, err error) {
	var cpu *os.File
	if p.cpu != "" {
		if cpu, err = os.Create(p.cpu); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	return func() error {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
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
