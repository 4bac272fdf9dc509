package conformance_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/conformance"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

func storeHarness(t conformance.T) conformance.Harness {
	open := func() *store.Store {
		st, err := store.Open(store.Options{FS: vfs.NewMem()})
		if err != nil {
			t.Fatalf("store.Open: %v", err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	src, dst := open(), open()
	return conformance.Harness{
		Source: services.NewStoreParticipant("kit", src, services.StoreParticipantOptions{}), SourceUser: conformance.StoreUser(src),
		Target: services.NewStoreParticipant("kit", dst, services.StoreParticipantOptions{}), TargetUser: conformance.StoreUser(dst),
	}
}

// dropFirst is a broken participant: every export page loses its first
// record.
type dropFirst struct{ contract.Participant }

func (d dropFirst) Export(ctx context.Context, req contract.ExportRequest) (contract.Page, error) {
	p, err := d.Participant.Export(ctx, req)
	if len(p.Records) > 0 {
		p.Records = p.Records[1:]
	}
	return p, err
}

func TestCheckPassesAConformingParticipant(t *testing.T) {
	var seen []string
	res := conformance.Check(t.Context(), storeHarness, func(r conformance.Result) { seen = append(seen, r.Case) })
	if len(res) != len(conformance.Cases()) || len(seen) != len(res) {
		t.Fatalf("%d results, %d reported, %d cases", len(res), len(seen), len(conformance.Cases()))
	}
	for _, r := range res {
		if !r.Pass || r.Reason != "" {
			t.Errorf("%s failed: %s", r.Case, r.Reason)
		}
	}
}

func TestCheckFailsABrokenParticipantNamingTheCase(t *testing.T) {
	broken := func(t conformance.T) conformance.Harness {
		h := storeHarness(t)
		h.Source = dropFirst{h.Source}
		return h
	}
	failed := map[string]string{}
	for _, r := range conformance.Check(t.Context(), broken, nil) {
		if !r.Pass {
			failed[r.Case] = r.Reason
		}
	}
	reason, ok := failed["HistoricalCopy"]
	if !ok {
		t.Fatalf("HistoricalCopy passed with records dropped from every page; failed: %v", failed)
	}
	if reason == "" || !strings.Contains(reason, "/") && !strings.Contains(reason, ":") {
		t.Fatalf("HistoricalCopy failed without a reason: %q", reason)
	}
	if _, ok := failed["AdmissionTable"]; ok {
		t.Fatalf("AdmissionTable failed though admission is intact: %s", failed["AdmissionTable"])
	}
}

// A case that panics fails with the panic; the run goes on.
func TestCheckSurvivesAPanic(t *testing.T) {
	n := 0
	res := conformance.Check(t.Context(), func(t conformance.T) conformance.Harness {
		n++
		if n == 1 {
			panic("factory exploded")
		}
		return storeHarness(t)
	}, nil)
	if res[0].Pass || !strings.Contains(res[0].Reason, "factory exploded") {
		t.Fatalf("first case: %+v", res[0])
	}
	if !res[len(res)-1].Pass {
		t.Fatalf("last case: %+v", res[len(res)-1])
	}
}
