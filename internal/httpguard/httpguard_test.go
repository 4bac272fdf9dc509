package httpguard

import (
	"net"
	"testing"
)

func TestSlots(t *testing.T) {
	if _, err := NewSlots(1, 2); err == nil {
		t.Fatal("per-client cap above the total accepted")
	}
	s, err := NewSlots(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Acquire("a") || !s.Acquire("a") || s.Acquire("a") {
		t.Fatal("per-client cap")
	}
	if !s.Acquire("b") || s.Acquire("c") {
		t.Fatal("total cap")
	}
	s.Release("a")
	if !s.Acquire("c") || s.InUse() != 3 {
		t.Fatalf("after a release: %d in use", s.InUse())
	}
}

func TestHosts(t *testing.T) {
	h := NewHosts("Cutover.Internal.")
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:8080": true, "127.0.0.1": true, "127.0.0.2:80": true, "[::1]:8080": true, "::1": true,
		"cutover.internal": true, "cutover.internal.:8080": true,
		"": false, "evil.example": false, "localhost.evil.example": false, "127.0.0.1.nip.io": false, "10.0.0.1": false, "[::2]:80": false,
	} {
		if got := h.Allowed(host); got != want {
			t.Errorf("Host %q: allowed %v, want %v", host, got, want)
		}
	}
	for addr, want := range map[string]bool{"127.0.0.1:0": true, "localhost:80": true, "[::1]:1": true, "0.0.0.0:80": false, ":8080": false, "nope": false} {
		if IsLoopback(addr) != want {
			t.Errorf("IsLoopback(%q) != %v", addr, want)
		}
	}
	if ClientOf("10.1.2.3:5555") != "10.1.2.3" || ClientOf(net.JoinHostPort("::1", "9")) != "::1" {
		t.Error("ClientOf")
	}
}
