package kvrouting

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// swapTo runs one migration of res to target up to its swap.
func swapTo(t *testing.T, e *env, res Resource, target, id string) (Token, *Document) {
	t.Helper()
	ctx := context.Background()
	g, err := e.lk.PreLock(ctx, res, target, id)
	if err != nil {
		t.Fatalf("%s: pre-lock: %v", id, err)
	}
	e.clock.Advance(2 * time.Minute)
	d, err := e.lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	if d, err = e.lk.EscalateWrite(ctx, res, g.Token, d); err != nil {
		t.Fatal(err)
	}
	if d, err = e.lk.Swap(ctx, res, g.Token, d); err != nil {
		t.Fatalf("%s: swap: %v", id, err)
	}
	return g.Token, d
}

// TestLastSwapSurvivesTheNextPreLock (issue 14 #2): the swap's CAS records
// {migration, token}; a later pre-lock, which overwrites the token on the
// secondary location, keeps it, so a replay of the swap (a lost Swapped
// event or CAS reply) is still recognised: Swap changes nothing, Release
// refuses with ErrIllegalTransition instead of "not ours". Escalations,
// renewals, releases and force-releases keep it; the next swap replaces it.
func TestLastSwapSurvivesTheNextPreLock(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	res := mustRegister(t, e, "lastswap", "us-east")
	if d := mustGet(t, e, res); d.LastSwap != nil {
		t.Fatalf("a new resource has a last swap: %+v", d.LastSwap)
	}
	tok1, d := swapTo(t, e, res, "eu-west", "m1")
	if !d.SwappedBy("m1", tok1) || d.SwappedBy("m2", tok1) || d.SwappedBy("m1", "other") {
		t.Fatalf("after the swap: last swap %+v", d.LastSwap)
	}
	g2, err := e.lk.PreLock(ctx, res, "us-east", "m2")
	if err != nil {
		t.Fatal(err)
	}
	if !g2.Doc.SwappedBy("m1", tok1) || g2.Doc.Secondary.Lock.Token == tok1 {
		t.Fatalf("after the next pre-lock: last swap %+v, secondary %+v", g2.Doc.LastSwap, g2.Doc.Secondary)
	}
	// M1 replays its swap: recognised, nothing written.
	got, err := e.lk.Swap(ctx, res, tok1, nil)
	if err != nil {
		t.Fatalf("replayed swap after another pre-lock: %v", err)
	}
	if got.Revision != g2.Doc.Revision || got.Token() != g2.Token {
		t.Fatalf("replayed swap wrote: revision %d (pre-lock %d), holder %s", got.Revision, g2.Doc.Revision, got.Token().Redacted())
	}
	if _, err := e.lk.Release(ctx, res, tok1, nil); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("release by the swapped token after another pre-lock: %v, want ErrIllegalTransition", err)
	}
	// Everything else M2 does keeps it.
	if _, err := e.lk.Renew(ctx, res, g2.Token, nil); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	d, err = e.lk.EscalateHardDelete(ctx, res, g2.Token, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !d.SwappedBy("m1", tok1) {
		t.Fatalf("after escalation: %+v", d.LastSwap)
	}
	if d, err = e.lk.Release(ctx, res, g2.Token, nil); err != nil || !d.SwappedBy("m1", tok1) {
		t.Fatalf("after M2's release: %v %+v", err, d)
	}
	if _, err := e.lk.PreLock(ctx, res, "us-east", "m3"); err != nil {
		t.Fatal(err)
	}
	if d, err = e.lk.ForceRelease(ctx, res, []string{"alice", "bob"}); err != nil || !d.SwappedBy("m1", tok1) {
		t.Fatalf("after a force-release: %v %+v", err, d)
	}
	// The next swap replaces it; the old token is then just a stranger's.
	tok4, d := swapTo(t, e, res, "us-east", "m4")
	if !d.SwappedBy("m4", tok4) {
		t.Fatalf("after the next swap: %+v", d.LastSwap)
	}
	if _, err := e.lk.Swap(ctx, res, tok1, nil); !errors.Is(err, ErrTokenMismatch) {
		t.Fatalf("M1's swap replayed after M4's swap: %v, want ErrTokenMismatch", err)
	}
}

// TestLastSwapEncoding: LastSwap travels under the short key "ls" with
// "m"/"k" inside, is left out when nil, and a document written before it
// existed (same schema version) decodes with LastSwap nil. A LastSwap
// without migration or token is malformed.
func TestLastSwapEncoding(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	d := &Document{Resource: "conv/x", Primary: Location{Region: "eu"}, UpdatedAt: at}
	b, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("\xa2ls")) {
		t.Fatalf("a document without a last swap encodes the key: %q", b)
	}
	// The version-1 layout before LastSwap existed, written by hand.
	old, err := msgpack.Marshal(map[string]any{"v": 1, "res": "conv/x", "p": map[string]any{"r": "eu", "l": map[string]any{"t": 0}},
		"lmid": "m0", "at": at})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeDocument(old, 7)
	if err != nil || got.LastSwap != nil || got.LastMigrationID != "m0" {
		t.Fatalf("an old document: %+v %v", got, err)
	}
	d.LastSwap = &SwapRecord{MigrationID: "m1", Token: "0123456789abcdef0123456789abcdef"}
	if b, err = d.Encode(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("\xa2ls")) {
		t.Fatalf("key ls missing: %q", b)
	}
	got, err = DecodeDocument(b, 8)
	if err != nil || !got.SwappedBy("m1", d.LastSwap.Token) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	c := got.Clone()
	c.LastSwap.MigrationID = "changed"
	if got.LastSwap.MigrationID != "m1" {
		t.Fatal("Clone shares LastSwap")
	}
	for _, bad := range []SwapRecord{{MigrationID: "m1"}, {Token: "0123456789abcdef0123456789abcdef"}} {
		d.LastSwap = &bad
		b, _ := d.Encode()
		if _, err := DecodeDocument(b, 9); !errors.Is(err, ErrMalformed) {
			t.Fatalf("last swap %+v: %v, want ErrMalformed", bad, err)
		}
	}
}
