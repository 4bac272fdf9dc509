package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestCLIErrorsNameNoPackage: a bad RESOURCE argument is reported in the
// CLI's words, never with the routing library's "kvrouting: " prefix.
func TestCLIErrorsNameNoPackage(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"conv/" + strings.Repeat("x", 300), "invalid resource id: longer than 200 bytes"},
		{"CONV/x", `invalid resource kind "CONV"`},
		{"conv", `invalid resource "conv": want kind/id`},
	} {
		var out, errs bytes.Buffer
		code := Run(context.Background(), []string{"routing", "get", tc.arg, "--nats", "nats://127.0.0.1:1"}, &out, &errs)
		if code != 2 || !strings.Contains(errs.String(), tc.want) || strings.Contains(errs.String(), "kvrouting:") {
			t.Errorf("routing get %.20q: exit %d, stderr %q; want 2 and %q", tc.arg, code, errs.String(), tc.want)
		}
	}
}
