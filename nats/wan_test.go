package cnats

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestParseWAN(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want WAN
		err  bool
	}{
		{in: "", want: WAN{}},
		{in: "rtt=80ms", want: WAN{RTT: 80 * time.Millisecond}},
		{in: "rtt=80ms,mbps=200", want: WAN{RTT: 80 * time.Millisecond, Mbps: 200}},
		{in: " mbps=0.5 , rtt=1s", want: WAN{RTT: time.Second, Mbps: 0.5}},
		{in: "rtt=fast", err: true},
		{in: "rtt=-1ms", err: true},
		{in: "mbps=-3", err: true},
		{in: "loss=1", err: true},
		{in: "rtt", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseWAN(tc.in)
			if tc.err {
				if !errors.Is(err, ErrInvalidOptions) {
					t.Fatalf("ParseWAN(%q) = %v, %v; want ErrInvalidOptions", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseWAN(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if back, err := ParseWAN(got.String()); err != nil || back != got {
				t.Fatalf("round trip of %q: %v, %v", got.String(), back, err)
			}
		})
	}
}

// startEcho runs a TCP echo server on loopback until the test ends.
func startEcho(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// TestProxyWAN: a shaped proxy delivers every byte, in order, and never
// sooner than its delay and bandwidth allow. Only lower bounds are checked:
// a loaded machine can make the link slower, never faster.
func TestProxyWAN(t *testing.T) {
	p, err := StartProxy(startEcho(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	echo := func(payload []byte) time.Duration {
		t.Helper()
		c, err := net.DialTimeout("tcp", p.Addr(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(60 * time.Second))
		start := time.Now()
		go func() { _, _ = c.Write(payload) }()
		got := make([]byte, len(payload))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("echo through the shaped proxy: %v", err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatal("echo changed the bytes")
		}
		return time.Since(start)
	}
	t.Run("delay", func(t *testing.T) {
		w := WAN{RTT: 100 * time.Millisecond}
		p.SetWAN(w)
		// Through the proxy and back: each direction adds RTT/2.
		if d := echo([]byte("ping")); d < w.RTT {
			t.Fatalf("echo took %v, less than the rtt %v", d, w.RTT)
		}
	})
	t.Run("bandwidth", func(t *testing.T) {
		w := WAN{Mbps: 8} // 1 MB/s
		p.SetWAN(w)
		payload := make([]byte, 256<<10)
		_, _ = rand.Read(payload)
		// Each direction carries the whole payload at 1 MB/s; the two
		// directions overlap, so the echo takes at least one transmission.
		if min, d := w.transmit(len(payload)), echo(payload); d < min {
			t.Fatalf("echo of %d bytes took %v, less than %v at %v Mbps", len(payload), d, min, w.Mbps)
		}
	})
	t.Run("partition", func(t *testing.T) {
		p.SetWAN(WAN{RTT: 20 * time.Millisecond})
		p.SetMode(ProxyDrop)
		c, err := net.DialTimeout("tcp", p.Addr(), 10*time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = c.Write([]byte("x"))
			if _, err := io.ReadFull(c, make([]byte, 1)); err == nil {
				t.Fatal("a dropped shaped link forwarded")
			}
			c.Close()
		}
		p.SetMode(ProxyOpen)
		echo([]byte("healed"))
	})
}
