package cnats

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cutover/cutover/nats/natsclient"
)

// natsclient maps JetStream error codes without linking the server; its
// numbers are the server's.
func TestClientErrorCodesAreTheServers(t *testing.T) {
	if natsclient.CodeNoMessageFound != int(server.JSNoMessageFoundErr) ||
		natsclient.CodeStreamNotFound != int(server.JSStreamNotFoundErr) ||
		natsclient.CodeClusterNotAvail != int(server.JSClusterNotAvailErr) {
		t.Fatal("natsclient's JetStream error codes are out of step with nats-server")
	}
}
