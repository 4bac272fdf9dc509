package contractnats_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

var testSecret = []byte("the deployment's contract secret, 32+ bytes")

// forge answers every request on subject with reply (nil: an empty,
// unsigned body), as an impostor that joined the subject would; it stops
// with the test.
func forge(t *testing.T, e *env, subject string, reply func(m *nats.Msg) *nats.Msg) {
	t.Helper()
	sub, err := e.nc.Subscribe(subject, func(m *nats.Msg) {
		out := reply(m)
		out.Subject = m.Reply
		_ = e.nc.PublishMsg(out)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// refusedAsForged checks err is the refusal of a reply not signed by the
// region's key.
func refusedAsForged(t *testing.T, what string, err error) {
	t.Helper()
	if code(t, err) != contract.CodeInternal || !strings.Contains(err.Error(), "not signed by region") {
		t.Fatalf("%s: %v, want the reply refused as not signed by the region's key", what, err)
	}
}

// TestSignedRepliesRefuseForgeries: a client holding the keys accepts the
// region's own signed replies — results and errors alike — and refuses an
// impostor's reply (a well-formed import result, as a reader that joined
// the queue group answered in the attack issue 24 names), a reply signed with
// another region's key, a genuine reply replayed to another request, and
// a server that signs nothing.
func TestSignedRepliesRefuseForgeries(t *testing.T) {
	e := newEnv(t)
	keys := contractnats.WithKeys(contractnats.SecretKeys(testSecret))
	st := openStore(t)
	p := services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{})

	t.Run("the region's own replies are accepted, errors too", func(t *testing.T) {
		srv := e.serve(t, "eu", p, contractnats.ServeOptions{Key: contractnats.RegionKey(testSecret, "eu")})
		defer srv.Stop()
		c := contractnats.Dial(e.nc, e.js, "eu", "messages", keys)
		if got, err := c.Authorize(t.Context(), res, hardDeleted); err != nil || got != hardDeleted {
			t.Fatalf("Authorize = %v, %v", got, err)
		}
		// A refusal is signed as well, and comes back as the store's error.
		if _, err := c.Authorize(t.Context(), res, contract.Authority{Rev: 3, Role: contract.RoleSecondary}); code(t, err) != contract.CodeConflict {
			t.Fatalf("a stale authority: %v, want conflict", err)
		}
	})

	t.Run("an impostor's unsigned reply", func(t *testing.T) {
		subject := contractnats.EndpointSubject("ap", "messages", contractnats.OpImport)
		// A well-formed import result: {applied: 0, total: 0}.
		body := append(append([]byte{0x82, 0xa7}, "applied"...), append(append([]byte{0x00, 0xa5}, "total"...), 0x00)...)
		forge(t, e, subject, func(*nats.Msg) *nats.Msg { return &nats.Msg{Data: body} })
		c := contractnats.Dial(e.nc, e.js, "ap", "messages", keys)
		_, err := c.Import(t.Context(), "m1", contract.PageInfo{Resource: res, Authority: importing})
		refusedAsForged(t, "an unsigned import result", err)
		// Without keys (development) the same reply is taken as it is:
		// the check is the keys'.
		if _, err := contractnats.Dial(e.nc, e.js, "ap", "messages").Import(t.Context(), "m1", contract.PageInfo{Resource: res, Authority: importing}); err != nil {
			t.Fatalf("without keys: %v", err)
		}
	})

	t.Run("a reply signed with another region's key", func(t *testing.T) {
		srv := e.serve(t, "sa", p, contractnats.ServeOptions{Key: contractnats.RegionKey(testSecret, "us")})
		defer srv.Stop()
		_, err := contractnats.Dial(e.nc, e.js, "sa", "messages", keys).Digests(t.Context(), res, contract.Authority{})
		refusedAsForged(t, "digests signed by another region", err)
	})

	t.Run("a genuine reply replayed to another request", func(t *testing.T) {
		srv := e.serve(t, "af", p, contractnats.ServeOptions{Key: contractnats.RegionKey(testSecret, "af")})
		subject := contractnats.EndpointSubject("af", "messages", contractnats.OpDigests)
		// Capture one signed reply (the request's nonce is ours).
		req := nats.NewMsg(subject)
		req.Header.Set(contractnats.HeaderNonce, "00112233445566778899aabbccddeeff")
		req.Data = []byte{0x82, 0xa3, 'r', 'e', 's', 0xa7, 'c', 'o', 'n', 'v', '/', 'c', '1', 0xa4, 'a', 'u', 't', 'h', 0x81, 0xa3, 'r', 'e', 'v', 0x00}
		captured, err := e.nc.RequestMsg(req, 10*time.Second)
		if err != nil || captured.Header.Get(contractnats.HeaderSignature) == "" || captured.Header.Get("Nats-Service-Error-Code") != "" {
			t.Fatalf("capture: %v, headers %v", err, captured.Header)
		}
		_ = srv.Stop()
		forge(t, e, subject, func(*nats.Msg) *nats.Msg { return &nats.Msg{Header: captured.Header, Data: captured.Data} })
		_, err = contractnats.Dial(e.nc, e.js, "af", "messages", keys).Digests(t.Context(), res, contract.Authority{})
		refusedAsForged(t, "a replayed reply", err)
	})

	t.Run("a server without the region's key", func(t *testing.T) {
		srv := e.serve(t, "oc", p, contractnats.ServeOptions{})
		defer srv.Stop()
		_, err := contractnats.Dial(e.nc, e.js, "oc", "messages", keys).Checkpoint(t.Context(), "m1")
		refusedAsForged(t, "an unsigned server", err)
	})

	t.Run("a region probe answered by an impostor", func(t *testing.T) {
		forge(t, e, contractnats.EndpointSubject("me", "messages", contractnats.OpCheckpoint), func(*nats.Msg) *nats.Msg { return &nats.Msg{} })
		d := contractnats.NewDirectory(e.nc, e.js, func(string) []string { return []string{"messages"} }, contractnats.DirectoryOptions{Keys: contractnats.SecretKeys(testSecret)})
		refusedAsForged(t, "the probe", d.ProbeRegion(t.Context(), "me", "conv"))
	})
}

// TestPlantedPageRefused: a page published ahead of the export under the
// Nats-Msg-Id the export will use (its parts are predictable) is what the
// stream keeps; the exporter, finding its publish deduplicated, reads the
// stored page back and refuses it as not signed by its region, so a
// forged page never reaches an import. The exporter's own earlier page
// (a retried export) is still accepted.
func TestPlantedPageRefused(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	put(t, st, res, "m1", "real")
	p := services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{})
	e.serve(t, "eu", p, contractnats.ServeOptions{Key: contractnats.RegionKey(testSecret, "eu")})
	c := contractnats.Dial(e.nc, e.js, "eu", "messages", contractnats.WithKeys(contractnats.SecretKeys(testSecret)))
	tok, err := st.SyncToken(res)
	if err != nil {
		t.Fatal(err)
	}
	const mig = "mig-planted"
	forged := contract.Page{Service: "messages", Resource: res, Mode: contract.Historical, SyncToken: tok,
		Records: []contract.Record{{ID: "m1", Kind: "message", Version: 99, Seq: 1, CreatedAt: 1, UpdatedAt: 1, Data: []byte("forged")}}}
	ref, err := contractnats.PublishPage(t.Context(), e.js, mig, forged)
	if err != nil || ref.Duplicate {
		t.Fatalf("plant: %+v, %v", ref, err)
	}
	req := contract.ExportRequest{Resource: res, Mode: contract.Historical, Authority: hardDeleted}
	_, err = c.ExportToStream(t.Context(), mig, req)
	if code(t, err) != contract.CodeInternal || !strings.Contains(err.Error(), "not signed by this region's key") {
		t.Fatalf("export onto a planted page: %v, want it refused", err)
	}
	// The exporter's own page, exported again, is found stored and taken.
	const mig2 = "mig-own"
	first, err := c.ExportToStream(t.Context(), mig2, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.ExportToStream(t.Context(), mig2, contract.ExportRequest{Resource: res, Mode: contract.Historical, SyncToken: first.SyncToken, Authority: hardDeleted})
	if err != nil || !again.Duplicate || again.Seq != first.Seq {
		t.Fatalf("a retried export: %+v, %v; want the stored page %d", again, err, first.Seq)
	}
}
