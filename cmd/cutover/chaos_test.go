package main

import (
	"bytes"
	"context"
	"testing"
)

// TestChaosUsage checks the flag validation without starting anything
// (the run itself is internal/chaos's TestChaosShort).
func TestChaosUsage(t *testing.T) {
	for _, args := range [][]string{{"--workers", "1"}, {"--clients", "0"}, {"--duration", "0s"}, {"--think", "1ms"}} {
		var out bytes.Buffer
		if code := Run(context.Background(), append([]string{"chaos"}, args...), &out, &out); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", args, code)
		}
	}
}
