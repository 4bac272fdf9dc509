package kvrouting

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDecideTable runs testdata/decide.txt: every lock state × operation
// class × primary / secondary / other location.
func TestDecideTable(t *testing.T) {
	f, err := os.Open("testdata/decide.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	const skew = 2 * time.Second
	tok := NewToken()
	future, past := now.Add(time.Hour), now.Add(-time.Hour)
	lockOf := map[string]Lock{
		"none":          {},
		"pre":           {Type: LockPre, Token: tok, NotBefore: past, Expiry: future},
		"pre-notbefore": {Type: LockPre, Token: tok, NotBefore: future, Expiry: future.Add(time.Hour)},
		"hd":            {Type: LockHardDelete, Token: tok, NotBefore: past, Expiry: future},
		"hd-expired":    {Type: LockHardDelete, Token: tok, NotBefore: past.Add(-time.Hour), Expiry: past},
		"write":         {Type: LockWrite, Token: tok, NotBefore: past, Expiry: future},
		"write-expired": {Type: LockWrite, Token: tok, NotBefore: past.Add(-time.Hour), Expiry: past},
	}
	secOf := map[string]*Location{
		"none":    nil,
		"locked":  {Region: "eu-west", Lock: Lock{Type: LockSecondary, Token: tok, NotBefore: past, Expiry: future}},
		"expired": {Region: "eu-west", Lock: Lock{Type: LockSecondary, Token: tok, NotBefore: past.Add(-time.Hour), Expiry: past}},
	}
	regionOf := map[string]string{"primary": "us-east", "secondary": "eu-west", "other": "ap-south"}
	sc := bufio.NewScanner(f)
	line, cases := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 5 {
			t.Fatalf("line %d: %q: want at least 5 fields", line, text)
		}
		lock, ok1 := lockOf[fields[0]]
		region, ok2 := regionOf[fields[1]]
		sec, ok3 := secOf[fields[2]]
		op, err := ParseOpClass(fields[3])
		if !ok1 || !ok2 || !ok3 || err != nil {
			t.Fatalf("line %d: %q: bad field", line, text)
		}
		wantOutcome := fields[4]
		wantReason := strings.Join(fields[5:], " ")
		doc := &Document{Resource: "conv/x", Primary: Location{Region: "us-east", Lock: lock}, Secondary: sec}
		t.Run(strings.Join(fields[:4], "/"), func(t *testing.T) {
			d := Decide(doc, region, op, now, skew)
			if d.Outcome.String() != wantOutcome || d.Reason != wantReason {
				t.Fatalf("line %d: got %s %q, want %s %q", line, d.Outcome, d.Reason, wantOutcome, wantReason)
			}
			if d.Outcome == Reject && d.RetryAfter <= 0 {
				t.Fatalf("line %d: reject without retry-after", line)
			}
			if d.Primary != "us-east" {
				t.Fatalf("primary %q", d.Primary)
			}
		})
		cases++
	}
	if cases < 30 {
		t.Fatalf("only %d cases", cases)
	}
}

// TestDecideSkew: enforcers honour a lock skew early and skew late.
func TestDecideSkew(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	skew := 2 * time.Second
	doc := &Document{Resource: "conv/x", Primary: Location{Region: "a", Lock: Lock{Type: LockWrite, Token: "t", NotBefore: now.Add(time.Second), Expiry: now.Add(-time.Second)}}}
	if d := Decide(doc, "a", OpUpdate, now, skew); d.Outcome != Reject {
		t.Fatalf("lock expired 1s ago must still hold within 2s skew, got %s", d.Outcome)
	}
	doc.Primary.Lock.Expiry = now.Add(-3 * time.Second)
	if d := Decide(doc, "a", OpUpdate, now, skew); d.Outcome != Allow {
		t.Fatalf("lock expired beyond skew must not hold, got %s", d.Outcome)
	}
}

// TestRetryHint: a 423's hint is the expected rest of a write lock's Phase 3
// (ExpectedWriteLock from its start, at least MinRetryHint, at most the
// lock's bound), never its lease; at a region that is not the primary it is
// 0 (resolve again).
func TestRetryHint(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	doc := &Document{Resource: "conv/c", Primary: Location{Region: "us", Lock: Lock{Type: LockWrite, Token: "t", NotBefore: t0, Expiry: t0.Add(10 * time.Second)}},
		Secondary: &Location{Region: "eu", Lock: Lock{Type: LockSecondary, Token: "t", Expiry: t0.Add(time.Hour)}}}
	for _, tc := range []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, ExpectedWriteLock},
		{300 * time.Millisecond, ExpectedWriteLock - 300*time.Millisecond},
		{5 * time.Second, MinRetryHint},
		{10*time.Second - 50*time.Millisecond, 50 * time.Millisecond}, // the bound
	} {
		d := Decide(doc, "us", OpNewWrite, t0.Add(tc.at), 0)
		if d.Outcome != Reject || d.RetryHint != tc.want || d.RetryAfter < d.RetryHint {
			t.Errorf("write lock at +%s: hint %s (bound %s), want %s", tc.at, d.RetryHint, d.RetryAfter, tc.want)
		}
	}
	for _, region := range []string{"eu", "ap"} {
		if d := Decide(doc, region, OpNewWrite, t0, 0); d.Outcome != Reject || d.RetryHint != 0 {
			t.Errorf("at %s: %+v, want a rejection with hint 0", region, d)
		}
	}
}
