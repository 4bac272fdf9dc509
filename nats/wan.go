package cnats

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// WAN is the shape of an emulated wide-area link (DESIGN.md "Regions for
// real"): what a gateway link between two regions adds on loopback. The zero
// value is an unshaped link.
type WAN struct {
	// RTT is the round-trip time the link adds; each direction is delayed by
	// RTT/2.
	RTT time.Duration
	// Mbps limits each direction to this many megabits per second; 0 means
	// unlimited.
	Mbps float64
}

// ParseWAN parses the --wan flag value, a comma-separated list of key=value:
// rtt=<duration> (e.g. 80ms) and mbps=<number> (e.g. 200). "" is the zero
// WAN. It returns an error wrapping ErrInvalidOptions.
func ParseWAN(s string) (WAN, error) {
	var w WAN
	if strings.TrimSpace(s) == "" {
		return w, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return WAN{}, fmt.Errorf("%w: wan %q: want key=value", ErrInvalidOptions, kv)
		}
		switch k {
		case "rtt":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return WAN{}, fmt.Errorf("%w: wan rtt %q", ErrInvalidOptions, v)
			}
			w.RTT = d
		case "mbps":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 {
				return WAN{}, fmt.Errorf("%w: wan mbps %q", ErrInvalidOptions, v)
			}
			w.Mbps = f
		default:
			return WAN{}, fmt.Errorf("%w: wan key %q (want rtt, mbps)", ErrInvalidOptions, k)
		}
	}
	return w, nil
}

// String formats w as ParseWAN reads it ("" for the zero WAN).
func (w WAN) String() string {
	var parts []string
	if w.RTT > 0 {
		parts = append(parts, "rtt="+w.RTT.String())
	}
	if w.Mbps > 0 {
		parts = append(parts, "mbps="+strconv.FormatFloat(w.Mbps, 'f', -1, 64))
	}
	return strings.Join(parts, ",")
}

// shaped reports whether w changes a link at all.
func (w WAN) shaped() bool { return w.RTT > 0 || w.Mbps > 0 }

// transmit is how long n bytes occupy a link of w's bandwidth.
func (w WAN) transmit(n int) time.Duration {
	if w.Mbps <= 0 {
		return 0
	}
	return time.Duration(float64(n*8) / (w.Mbps * 1e6) * float64(time.Second))
}
