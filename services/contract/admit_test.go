package contract_test

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/services/contract"
)

// TestAdmitTable runs testdata/admit.txt against contract.Admit.
func TestAdmitTable(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	cases, err := contract.AdmitCases(now)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 80 {
		t.Fatalf("only %d rows", len(cases))
	}
	seen := map[contract.Op]bool{}
	for _, c := range cases {
		seen[c.Op] = true
		d := contract.Admit(c.Record, c.Op, c.Stamp, now)
		keep := c.Record
		if d.Persist {
			keep = d.Next
		}
		if d.Verdict != c.Verdict || d.RetryAfter != c.RetryAfter || keep != c.Keep {
			t.Errorf("line %d %q: got %s retry=%s keep=%s (%s), want %s retry=%s keep=%s",
				c.Line, c.Text, d.Verdict, d.RetryAfter, keep, d.Why, c.Verdict, c.RetryAfter, c.Keep)
		}
		if e := d.Err("conv/x"); (e == nil) != (d.Verdict == contract.Allow || d.Verdict == contract.Tombstone) {
			t.Errorf("line %d: verdict %s, error %v", c.Line, d.Verdict, e)
		}
	}
	for _, op := range contract.Ops {
		if !seen[op] {
			t.Errorf("the table has no row for %s", op)
		}
	}
}

// TestJoinOrderFree: authorities derived from one history of routing
// revisions (at most one per revision, the same on every copy) end in the
// same record whatever order they arrive in, each any number of times: the
// record is the stamp of the highest revision.
func TestJoinOrderFree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	roles := []contract.Authority{
		{Role: contract.RolePrimary}, {Role: contract.RolePrimary, Deletes: contract.DeletesTombstone, Until: 9},
		{Role: contract.RoleExporting, Until: 9}, {Role: contract.RoleImporting}, {Role: contract.RoleSecondary},
	}
	for range 2000 {
		n := 1 + r.IntN(6)
		hist := make([]contract.Authority, n)
		for i := range hist {
			hist[i] = roles[r.IntN(len(roles))]
			hist[i].Rev = uint64(i + 1)
		}
		var deliveries []contract.Authority
		for _, a := range hist {
			for range 1 + r.IntN(3) {
				deliveries = append(deliveries, a)
			}
		}
		r.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
		var rec contract.Authority
		for _, a := range deliveries {
			next, res := contract.Join(rec, a)
			if res == contract.Conflict {
				t.Fatalf("conflict joining %s into %s", a, rec)
			}
			if res == contract.Joined {
				rec = next
			}
		}
		if rec != hist[n-1] {
			t.Fatalf("history %v delivered as %v: record %s, want %s", hist, deliveries, rec, hist[n-1])
		}
	}
}

// TestAuthorityValidate covers the malformed authorities Admit refuses as
// invalid.
func TestAuthorityValidate(t *testing.T) {
	good := []contract.Authority{
		{}, {Rev: 3, Role: contract.RolePrimary}, {Rev: 3, Role: contract.RoleSecondary},
		{Rev: 3, Role: contract.RoleExporting, Until: 5}, {Rev: 3, Deletes: contract.DeletesTombstone, Until: 5},
		{Rev: 3, Role: contract.RolePrimary, Deletes: contract.DeletesPhysical},
	}
	bad := []contract.Authority{
		{Rev: 3, Role: "owner"}, {Rev: 3, Role: contract.RoleExporting}, {Rev: 3, Role: contract.RoleImporting, Until: 5},
		{Rev: 3, Role: contract.RoleSecondary, Deletes: contract.DeletesTombstone, Until: 5}, {Rev: 3, Deletes: "soft"},
		{Rev: 3, Role: contract.RoleExporting, Until: -1}, {Role: contract.RoleSecondary},
	}
	for _, a := range good {
		if err := a.Validate(); err != nil {
			t.Errorf("%+v: %v", a, err)
		}
	}
	for _, a := range bad {
		if err := a.Validate(); err == nil || contract.AsError(err).Code != contract.CodeInvalid {
			t.Errorf("%+v: %v, want invalid", a, err)
		}
	}
}

func TestUntilOfRoundsUp(t *testing.T) {
	at := time.UnixMilli(1000).Add(time.Microsecond)
	if got := contract.UntilOf(at); got != 1001 {
		t.Fatalf("UntilOf(%v) = %d", at, got)
	}
	if got := contract.UntilOf(time.UnixMilli(1000)); got != 1000 {
		t.Fatalf("UntilOf(1000ms) = %d", got)
	}
}

// TestParticipantDocHasTheTable: docs/participant.md carries
// testdata/admit.txt verbatim, so the table an implementer reads is the one
// every participant is checked against.
func TestParticipantDocHasTheTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/participant.md")
	if err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile("testdata/admit.txt")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- admit.txt begin -->\n```\n", "```\n<!-- admit.txt end -->"
	_, rest, ok := strings.Cut(string(doc), begin)
	if !ok {
		t.Fatalf("docs/participant.md has no %q", begin)
	}
	got, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("docs/participant.md has no %q", end)
	}
	if got != string(table) {
		t.Fatal("docs/participant.md's admission table differs from testdata/admit.txt: copy the file between the markers")
	}
}

// A write fence far in the future (an Until near the int64 limit) still
// answers the capped Retry-After, never a negative one.
func TestRetryAfterOfAFarFence(t *testing.T) {
	now := time.Now()
	for _, until := range []int64{math.MaxInt64, 1 << 50, now.UnixMilli() + 400} {
		rec := contract.Authority{Rev: 4, Role: contract.RoleExporting, Until: until}
		d := contract.Admit(rec, contract.OpCreate, contract.Authority{}, now)
		if d.Verdict != contract.Locked || d.RetryAfter <= 0 || d.RetryAfter > contract.MaxRetryAfter {
			t.Errorf("Until %d: %s, Retry-After %v; want locked within (0, %v]", until, d.Verdict, d.RetryAfter, contract.MaxRetryAfter)
		}
	}
}
