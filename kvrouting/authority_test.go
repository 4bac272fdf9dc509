package kvrouting

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/services/contract"
)

// TestAuthorityAtTable runs testdata/authority.txt.
func TestAuthorityAtTable(t *testing.T) {
	f, err := os.Open("testdata/authority.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	const skew = 2 * time.Second
	tok := NewToken()
	exp := now.Add(time.Hour)
	locks := map[string]Lock{
		"none":  {},
		"pre":   {Type: LockPre, Token: tok, NotBefore: now, Expiry: exp},
		"hd":    {Type: LockHardDelete, Token: tok, NotBefore: now, Expiry: exp},
		"write": {Type: LockWrite, Token: tok, NotBefore: now, Expiry: exp},
	}
	regions := map[string]string{"primary": "us-east", "target": "eu-west", "old": "ap-south", "other": "sa-east"}
	sc := bufio.NewScanner(f)
	line, n := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fld := strings.Fields(text)
		lock, ok1 := locks[fld[0]]
		region, ok2 := regions[fld[1]]
		want, err := contract.ParseAuthority(fld[2], now)
		if len(fld) != 3 || !ok1 || !ok2 || err != nil {
			t.Fatalf("line %d %q: bad row (%v)", line, text, err)
		}
		doc := &Document{Resource: "conv/x", Primary: Location{Region: "us-east", Lock: lock}, Revision: 7}
		if lock.Type != LockNone {
			doc.Target = "eu-west"
			doc.Secondary = &Location{Region: "eu-west", Lock: Lock{Type: LockSecondary, Token: tok, Expiry: exp}}
		} else {
			doc.Secondary = &Location{Region: "ap-south", Lock: Lock{Type: LockSecondary, Token: tok, Expiry: exp}}
		}
		if got := doc.AuthorityAt(region, skew); got != want {
			t.Errorf("line %d %q: got %s, want %s", line, text, got, want)
		}
		if err := doc.AuthorityAt(region, skew).Validate(); err != nil {
			t.Errorf("line %d: %v", line, err)
		}
		n++
	}
	if n < 10 {
		t.Fatalf("only %d rows", n)
	}
}
