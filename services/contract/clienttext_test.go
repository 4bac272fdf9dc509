package contract_test

import (
	"testing"

	"github.com/cutover/cutover/services/contract"
)

func TestClientText(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   "",
		"conversation \"c\" not found":       "conversation \"c\" not found",
		"store: not found: message \"m\"":    "not found: message \"m\"",
		"ref: store: invalid argument: bad":  "ref: invalid argument: bad",
		"kvrouting: store: x":                "x",
		"id \"store: x\": bad":               "id \"store: x\": bad",
		"id \"a\\\"store: x\": kvrouting: y": "id \"a\\\"store: x\": y",
		"restore: y":                         "restore: y",
		"the store: y":                       "the store: y",
		"pebble: closed":                     "closed",
		"unauthorized: bad token":            "unauthorized: bad token",
		"kvrouting:":                         "kvrouting:",
	} {
		if got := contract.ClientText(in); got != want {
			t.Errorf("ClientText(%q) = %q, want %q", in, got, want)
		}
	}
}
