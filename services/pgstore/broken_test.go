package pgstore_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cutover/cutover/internal/pgserver/pgtest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/participant"
)

// A broken adapter must fail the conformance kit, naming the case. Each
// variant wraps the real PostgreSQL adapter and breaks one rule.
var brokenVariants = []struct {
	name     string
	wantFail string // a subtest of contracttest.Run that must fail
	wrap     func(participant.Tx) participant.Tx
}{
	// The authority record is never written: a request routed by a stale
	// revision is let through.
	{"authority-not-kept", "AdmissionTable", func(t participant.Tx) participant.Tx { return forgetAuthority{t} }},
	// The change index skips the first change after the cursor: a copy
	// loses a record.
	{"changes-skip-one", "HistoricalCopy", func(t participant.Tx) participant.Tx { return skipChange{t} }},
}

type forgetAuthority struct{ participant.Tx }

func (forgetAuthority) SetAuthority(contract.Authority) error { return nil }

type skipChange struct{ participant.Tx }

func (s skipChange) Changes(after, upto uint64, limit int) ([]contract.Record, error) {
	recs, err := s.Tx.Changes(after, upto, limit)
	if len(recs) > 0 {
		recs = recs[1:]
	}
	return recs, err
}

// brokenStorage applies a variant to every transaction.
type brokenStorage struct {
	participant.Storage
	wrap func(participant.Tx) participant.Tx
}

func (b brokenStorage) Update(ctx context.Context, resource string, fn func(participant.Tx) error) error {
	return b.Storage.Update(ctx, resource, func(tx participant.Tx) error { return fn(b.wrap(tx)) })
}

func (b brokenStorage) View(ctx context.Context, resource string, fn func(participant.Reader) error) error {
	return b.Storage.View(ctx, resource, func(r participant.Reader) error {
		if tx, ok := r.(participant.Tx); ok {
			r = b.wrap(tx)
		}
		return fn(r)
	})
}

// TestBrokenConformance runs the kit against one broken variant; it is run
// (and expected to fail) by TestBrokenAdaptersFail in a child process.
func TestBrokenConformance(t *testing.T) {
	name := os.Getenv("CUTOVER_BROKEN_VARIANT")
	if name == "" {
		t.Skip("run by TestBrokenAdaptersFail")
	}
	for _, v := range brokenVariants {
		if v.name != name {
			continue
		}
		contracttest.Run(t, func(t *testing.T) contracttest.Harness {
			mk := func() *participant.Participant {
				st := brokenStorage{open(t, pgtest.Database(t), "kit"), v.wrap}
				return participant.New("kit", st, participant.Options{})
			}
			src, dst := mk(), mk()
			return contracttest.Harness{Source: src, SourceUser: contracttest.KitUser(src), Target: dst, TargetUser: contracttest.KitUser(dst)}
		})
		return
	}
	t.Fatalf("no variant %q", name)
}

func TestBrokenAdaptersFail(t *testing.T) {
	pgtest.Shared(t) // skip where the machine has no PostgreSQL
	for _, v := range brokenVariants {
		t.Run(v.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBrokenConformance$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), "CUTOVER_BROKEN_VARIANT="+v.name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the conformance kit passed a broken adapter (%s):\n%s", v.name, tail(out))
			}
			if !strings.Contains(string(out), "--- FAIL: TestBrokenConformance/"+v.wantFail) {
				t.Fatalf("the kit failed, but not in %s:\n%s", v.wantFail, tail(out))
			}
		})
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
