package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/internal/pgserver/pgtest"
	"github.com/cutover/cutover/internal/proctest"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/services/conformance"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/pgstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestConformanceAgainstParticipantProcesses runs `cutover conformance`
// over NATS against `cutover participant --test-harness` as a separate
// process, on PostgreSQL (the participant kit) and on Pebble (the store):
// every case passes in both roles, and nothing the run wrote is left in
// the database.
func TestConformanceAgainstParticipantProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs participant processes")
	}
	ns := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, ns.ClientURL())
	defer nc.Close()
	if _, err := contractnats.ProvisionPages(t.Context(), js, 1); err != nil {
		t.Fatal(err)
	}
	bin := proctest.Binary(t, t.TempDir())
	t.Run("postgres", func(t *testing.T) {
		db := pgtest.Database(t)
		conformanceOver(t, bin, ns.ClientURL(), "eu-west", "--postgres", db)
		conn, err := pgx.Connect(t.Context(), db)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		var left int
		if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM cutover_records").Scan(&left); err != nil || left != 0 {
			t.Fatalf("%d records left behind by the run (%v)", left, err)
		}
	})
	t.Run("pebble", func(t *testing.T) {
		conformanceOver(t, bin, ns.ClientURL(), "us-east", "--pebble", t.TempDir())
	})
}

// conformanceOver starts a participant process with store (its flag and
// value) for "notes" in region and runs `cutover conformance` against it.
func conformanceOver(t *testing.T, bin, natsURL, region string, store ...string) {
	t.Helper()
	args := append([]string{"participant", "--nats", natsURL, "--region", region, "--service", "notes", "--test-harness", "--insecure-dev-auth"}, store...)
	p := proctest.Start(t, bin, "participant", args...)
	p.Await(t, `Ctrl-C to stop`, 2*time.Minute)

	var out, errb bytes.Buffer
	code := Run(t.Context(), []string{"conformance", "--nats", natsURL, "--region", region, "--service", "notes", "--json"}, &out, &errb)
	var rep ops.ConformanceReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d, --json output: %v\n%s\n%s", code, err, out.String(), errb.String())
	}
	if code != 0 || rep.Failed != 0 || rep.Passed != 2*len(conformance.Cases()) {
		t.Fatalf("exit %d, %d passed, %d failed (want %d passed):\n%s\n%s", code, rep.Passed, rep.Failed, 2*len(conformance.Cases()), out.String(), errb.String())
	}
	if !strings.HasPrefix(rep.ResourcePrefix, "conv/conformance-") {
		t.Fatalf("resource prefix %q", rep.ResourcePrefix)
	}
}

// forgetful is a broken participant kit: the authority record is never
// written, so requests routed by stale revisions pass.
type forgetful struct{ participant.Storage }

type forgetfulTx struct{ participant.Tx }

func (forgetfulTx) SetAuthority(contract.Authority) error { return nil }

func (f forgetful) Update(ctx context.Context, res string, fn func(participant.Tx) error) error {
	return f.Storage.Update(ctx, res, func(tx participant.Tx) error { return fn(forgetfulTx{tx}) })
}

// TestConformanceFailsABrokenParticipant: `cutover conformance` against a
// participant that does not keep its authority record exits 1 and names
// the admission table.
func TestConformanceFailsABrokenParticipant(t *testing.T) {
	st, err := pgstore.Open(t.Context(), pgtest.Database(t), pgstore.Options{Service: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ns := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, ns.ClientURL())
	defer nc.Close()
	if _, err := contractnats.ProvisionPages(t.Context(), js, 1); err != nil {
		t.Fatal(err)
	}
	p := participant.New("notes", forgetful{st}, participant.Options{})
	u := conformance.KitUser(p)
	srv, err := contractnats.Serve(t.Context(), nc, js, "eu-west", p, contractnats.ServeOptions{Harness: &u})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	var out, errb bytes.Buffer
	code := Run(t.Context(), []string{"conformance", "--nats", ns.ClientURL(), "--region", "eu-west", "--service", "notes"}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s\n%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "FAIL source/AdmissionTable") || !strings.Contains(errb.String(), "cases failed") {
		t.Fatalf("the failure does not name the admission table:\n%s\n%s", out.String(), errb.String())
	}
}

// TestConformanceRefusals: bad flags are usage errors (exit 2); a
// participant with no harness is one clear error, not a list of failures.
func TestConformanceRefusals(t *testing.T) {
	ns := natstest.RunServer(t)
	for _, args := range [][]string{
		{"conformance", "--nats", ns.ClientURL(), "--service", "notes"},
		{"conformance", "--nats", ns.ClientURL(), "--region", "eu-west"},
		{"conformance", "--nats", ns.ClientURL(), "--region", "eu-west", "--service", "no.dots"},
		{"conformance", "--nats", ns.ClientURL(), "--region", "eu-west", "--service", "notes", "extra"},
		{"participant", "--region", "eu-west", "--service", "notes", "--insecure-dev-auth"},
		{"participant", "--region", "eu-west", "--service", "notes", "--postgres", "postgres://x", "--pebble", "/tmp/x", "--insecure-dev-auth"},
		{"participant", "--region", "eu-west", "--service", "notes", "--postgres", "mysql://x", "--insecure-dev-auth"},
		{"participant", "--region", "EU", "--service", "notes", "--pebble", "/tmp/x", "--insecure-dev-auth"},
	} {
		var out, errb bytes.Buffer
		if code := Run(t.Context(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	code := Run(ctx, []string{"conformance", "--nats", ns.ClientURL(), "--region", "eu-west", "--service", "nobody", "--timeout", "20s"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "test harness does not answer") {
		t.Fatalf("no participant: exit %d: %s%s", code, out.String(), errb.String())
	}
}
