package bench

import (
	"slices"
	"syscall"
	"time"
)

// Durability settings, stated with every figure.
const (
	DurableSingle = "single node: JetStream sync_interval always, Pebble fsync per commit"
	LazyJetStream = "single node: JetStream lazy (background) fsync, Pebble fsync per commit — NOT the durable default"
	DurableR3     = "3-node embedded cluster (one machine): streams and routing bucket R3, JetStream sync_interval always (R3 syncs the Raft log per append batch), Pebble fsync per commit"
	PebbleNoSync  = "Pebble NoSync (store only, no JetStream)"
	PebbleSync    = "Pebble fsync per commit (store only, no JetStream)"
)

// Pct summarises a sample: average, percentiles and maximum.
type Pct struct {
	N   int     `json:"n"`
	Avg float64 `json:"avg"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Percentiles summarises v (nearest-rank percentiles); empty v gives zeros.
func Percentiles(v []float64) Pct {
	avg, q, mx := Quantiles(v, 0.50, 0.99)
	return Pct{N: len(v), Avg: avg, P50: q[0], P99: q[1], Max: mx}
}

// Quantiles returns v's average, its nearest-rank quantiles at ps and its
// maximum; empty v gives zeros.
func Quantiles(v []float64, ps ...float64) (avg float64, qs []float64, maxV float64) {
	qs = make([]float64, len(ps))
	if len(v) == 0 {
		return 0, qs, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	for i, p := range ps {
		qs[i] = s[min(len(s)-1, int(p*float64(len(s))))]
	}
	return sum / float64(len(s)), qs, s[len(s)-1]
}

// Ratio is a/b, or 0 when b is 0 (no meaningful ratio).
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// CPU is process CPU time (user + system) from getrusage.
type CPU struct{ User, System time.Duration }

// ReadCPU returns the process's CPU time so far (zero if getrusage fails).
func ReadCPU() CPU {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return CPU{}
	}
	return CPU{User: time.Duration(ru.Utime.Nano()), System: time.Duration(ru.Stime.Nano())}
}

// CPUUse is the CPU spent between two readings over a wall interval.
type CPUUse struct {
	UserS   float64 `json:"user_s"`
	SystemS float64 `json:"system_s"`
	// Cores is (user + system) / wall: how many cores were busy on average.
	Cores float64 `json:"cores"`
}

// Since computes the use from before to now over wall.
func (before CPU) Since(wall time.Duration) CPUUse {
	now := ReadCPU()
	u, s := now.User-before.User, now.System-before.System
	return CPUUse{UserS: u.Seconds(), SystemS: s.Seconds(), Cores: Ratio((u + s).Seconds(), wall.Seconds())}
}
