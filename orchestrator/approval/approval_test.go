package approval

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"alice":             "alice",
		" Alice ":           "alice",
		"ALICE":             "alice",
		"alice\u200b":       "alice", // zero-width space (Cf)
		"al\u00adice":       "alice", // soft hyphen (Cf)
		"alice\u200d":       "alice", // zero-width joiner (Cf)
		"\ufeffalice":       "alice", // byte-order mark (Cf)
		"ａｌｉｃｅ":             "alice", // fullwidth (NFKC)
		"ﬁona":              "fiona", // ligature (NFKC)
		"Straße":            "strasse",
		"\u0430lice":        "\u0430lice", // Cyrillic а stays Cyrillic: ValidName refuses it
		"jose\u0301":        "josé",       // composed
		"\u202ealice\u202c": "alice",      // bidi override (Cf)
	} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"alice", "bob-2", "josé", "łukasz", "alice.smith@example.com", "山田太郎", "やまだ", "山田たろう", "김민준", "\u0430\u043b\u0438\u0441\u0430"} {
		if err := ValidName(ok); err != nil {
			t.Errorf("ValidName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Alice", "alice\u200b", "\u0430lice", "al ice", "-alice", ".alice", "alice!", "alice\n",
		strings.Repeat("a", MaxNameRunes+1), "αlice", "\xff"} {
		if err := ValidName(bad); !errors.Is(err, ErrName) {
			t.Errorf("ValidName(%q) = %v, want ErrName", bad, err)
		}
	}
}

// operators are the test registry's keys; mallory is not registered.
type operators map[string]*Key

func mustKeys(t *testing.T, names ...string) operators {
	t.Helper()
	ks := operators{}
	for _, n := range names {
		k, err := GenerateKey(n)
		if err != nil {
			t.Fatal(err)
		}
		ks[n] = k
	}
	return ks
}

func (ks operators) registry(t *testing.T, names ...string) *Registry {
	t.Helper()
	var es []Entry
	for _, n := range names {
		es = append(es, ks[n].Entry())
	}
	r, err := NewRegistry(es...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// signStatement signs any statement with k, as a forger holding k could.
func signStatement(t *testing.T, k *Key, st Statement) string {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return token(b, ed25519.Sign(k.priv, signed(b)))
}

func TestVerify(t *testing.T) {
	ks := mustKeys(t, "alice", "bob", "carol", "mallory")
	reg := ks.registry(t, "alice", "bob", "carol")
	now := time.Unix(1_800_000_000, 0)
	q := Request{Operation: OpFenceClear, Resource: "conv/x", Region: "us-east", Reason: "stranded"}
	approve := func(name string, q Request) string {
		tok, err := ks[name].Approve(q, now.Add(-time.Minute), 15*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	statement := func(name, operator string, mod func(*Statement)) string {
		st := Statement{Version: version, Operator: operator, Operation: q.Operation, Resource: q.Resource, Region: q.Region,
			Reason: q.Reason, IssuedAt: now.Add(-time.Minute).Unix(), ExpiresAt: now.Add(10 * time.Minute).Unix(), Nonce: hex.EncodeToString(make([]byte, 16))}
		if mod != nil {
			mod(&st)
		}
		return signStatement(t, ks[name], st)
	}
	alice, bob := approve("alice", q), approve("bob", q)

	got, err := reg.Verify(q, []string{"Alice", "bob"}, []string{alice, bob}, now)
	if err != nil || len(got) != 2 || got[0].Operator != "alice" || got[1].Operator != "bob" || got[0].ID == got[1].ID || len(got[0].ID) != 32 {
		t.Fatalf("two operators: %v %+v", err, got)
	}
	if _, err := reg.Verify(q, nil, []string{bob, alice}, now); err != nil {
		t.Fatalf("without --approver: %v", err)
	}

	other := func(mod func(*Request)) string {
		r := q
		mod(&r)
		return approve("bob", r)
	}
	tampered := func(tok string) string { // the reason changed after signing
		a, err := Parse(tok)
		if err != nil {
			t.Fatal(err)
		}
		st := a.Statement
		st.Reason = "something else"
		b, _ := json.Marshal(st)
		return token(b, a.sig)
	}
	for _, c := range []struct {
		name      string
		approvers []string
		tokens    []string
		want      error
		says      string
	}{
		{"one approval", nil, []string{alice}, ErrTooFew, "2 distinct"},
		{"none", []string{"alice", "bob"}, nil, ErrTooFew, "0 signed"},
		{"the same approval twice", nil, []string{alice, alice}, ErrSameOperator, `"alice" approves twice`},
		{"the same operator twice", nil, []string{alice, approve("alice", q)}, ErrSameOperator, "twice"},
		{"zero-width space", nil, []string{alice, statement("alice", "alice\u200b", nil)}, ErrSameOperator, "twice"},
		{"soft hyphen", nil, []string{alice, statement("alice", "alice\u00ad", nil)}, ErrSameOperator, "twice"},
		{"upper case", nil, []string{alice, statement("alice", "ALICE", nil)}, ErrSameOperator, "twice"},
		{"Cyrillic а", nil, []string{alice, statement("alice", "\u0430lice", nil)}, ErrUnknownOperator, "not in the registry"},
		{"unknown operator", nil, []string{alice, approve("mallory", q)}, ErrUnknownOperator, `"mallory"`},
		{"forged: bob's name, mallory's key", nil, []string{alice, statement("mallory", "bob", nil)}, ErrSignature, `"bob"`},
		{"forged: bob's name, alice's key", nil, []string{alice, statement("alice", "bob", nil)}, ErrSignature, `"bob"`},
		{"tampered after signing", nil, []string{alice, tampered(bob)}, ErrSignature, "not signed"},
		{"expired", nil, []string{alice, statement("bob", "bob", func(s *Statement) {
			s.IssuedAt, s.ExpiresAt = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
		})}, ErrExpired, "expired"},
		{"expires now", nil, []string{alice, statement("bob", "bob", func(s *Statement) { s.ExpiresAt = now.Unix() })}, ErrExpired, "expired"},
		{"valid too long", nil, []string{alice, statement("bob", "bob", func(s *Statement) { s.ExpiresAt = s.IssuedAt + 3601 })}, ErrExpired, "at most 1h"},
		{"issued in the future", nil, []string{alice, statement("bob", "bob", func(s *Statement) {
			s.IssuedAt, s.ExpiresAt = now.Add(2*time.Minute).Unix(), now.Add(10*time.Minute).Unix()
		})}, ErrExpired, "future"},
		{"another operation", nil, []string{alice, other(func(r *Request) { r.Operation, r.Region = OpForceRelease, "" })}, ErrMismatch, "force-release"},
		{"another resource", nil, []string{alice, other(func(r *Request) { r.Resource = "conv/y" })}, ErrMismatch, "conv/y"},
		{"another region", nil, []string{alice, other(func(r *Request) { r.Region = "eu-west" })}, ErrMismatch, "eu-west"},
		{"another reason", nil, []string{alice, other(func(r *Request) { r.Reason = "because" })}, ErrMismatch, "because"},
		{"not a token", nil, []string{alice, "bob"}, ErrMalformed, "not an approval token"},
		{"not canonical", nil, []string{alice, func() string {
			a, _ := Parse(bob)
			b, _ := json.MarshalIndent(a.Statement, "", " ")
			return token(b, ed25519.Sign(ks["bob"].priv, signed(b)))
		}()}, ErrMalformed, "canonical"},
		{"an unknown field", nil, []string{alice, func() string {
			b := []byte(`{"v":1,"operator":"bob","op":"fence-clear","resource":"conv/x","region":"us-east","reason":"stranded","iat":1,"exp":2,"nonce":"00000000000000000000000000000000","admin":true}`)
			return token(b, ed25519.Sign(ks["bob"].priv, signed(b)))
		}()}, ErrMalformed, "admin"},
		{"too many", nil, []string{alice, bob, bob, bob, bob, bob, bob, bob, bob}, ErrMalformed, "at most 8"},
		{"an approver without an approval", []string{"alice", "carol"}, []string{alice, bob}, ErrApprovers, `"carol"`},
		{"an approval without its approver", []string{"alice"}, []string{alice, bob}, ErrApprovers, `"bob"`},
		{"approver spelt with a zero-width space", []string{"alice", "bob\u200b", "carol"}, []string{alice, bob}, ErrApprovers, `"carol"`},
	} {
		_, err := reg.Verify(q, c.approvers, c.tokens, now)
		if !errors.Is(err, c.want) || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.want, c.says)
		}
	}
	// Names given without signatures (development): the tricks are
	// refused there too.
	for _, names := range [][]string{{"alice", "alice\u200b"}, {"alice", "\u0430lice"}, {"alice", "alice\u00ad"}, {"alice", " ALICE "}, {"alice"}} {
		if _, err := CheckUnsigned(names); !errors.Is(err, ErrRefused) {
			t.Errorf("CheckUnsigned(%q) = %v, want a refusal", names, err)
		}
	}
	if got, err := CheckUnsigned([]string{"Alice", "bob"}); err != nil || strings.Join(got, ",") != "alice,bob" {
		t.Errorf("CheckUnsigned(alice, bob) = %v %v", got, err)
	}
}

func TestRegistry(t *testing.T) {
	ks := mustKeys(t, "alice", "bob")
	a, b := ks["alice"].Entry(), ks["bob"].Entry()
	reg, err := NewRegistry(a, b)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(reg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseRegistry(js)
	if err != nil || back.Len() != 2 || back.Entries()[1] != b {
		t.Fatalf("round trip: %v %s", err, js)
	}
	if js, _ := json.Marshal(&Registry{}); string(js) != "[]" {
		t.Errorf("empty registry: %s", js)
	}
	for name, es := range map[string][]Entry{
		"a name twice":         {a, {Name: "alice", PublicKey: b.PublicKey}},
		"a key twice":          {a, {Name: "alicia", PublicKey: a.PublicKey}},
		"a name not canonical": {{Name: "Alice", PublicKey: a.PublicKey}},
		"a mixed-script name":  {{Name: "\u0430lice", PublicKey: a.PublicKey}},
		"a bad key":            {{Name: "alice", PublicKey: "ed25519:AAAA"}},
		"another algorithm":    {{Name: "alice", PublicKey: strings.Replace(a.PublicKey, "ed25519:", "rsa:", 1)}},
	} {
		if _, err := NewRegistry(es...); !errors.Is(err, ErrRegistry) {
			t.Errorf("%s: %v, want ErrRegistry", name, err)
		}
	}
	for name, raw := range map[string]string{
		"an object":        `{"operators":[]}`,
		"an unknown field": `[{"name":"alice","public_key":"` + a.PublicKey + `","admin":true}]`,
		"trailing data":    `[] []`,
	} {
		if _, err := ParseRegistry([]byte(raw)); !errors.Is(err, ErrRegistry) {
			t.Errorf("%s: %v, want ErrRegistry", name, err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "operators.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := File(path).Registry(); err != nil || r.Len() != 2 {
		t.Fatalf("load: %v", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRegistry(path); !errors.Is(err, ErrRegistry) || !strings.Contains(err.Error(), "writable") {
		t.Errorf("a world-writable registry: %v", err)
	}
}

func TestKeyFile(t *testing.T) {
	k, err := GenerateKey(" Alice ")
	if err != nil || k.Name() != "alice" {
		t.Fatalf("%v %v", k, err)
	}
	pemBytes, err := k.MarshalPEM()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseKey(pemBytes)
	if err != nil || back.Name() != "alice" || back.Entry() != k.Entry() {
		t.Fatalf("round trip: %v", err)
	}
	if _, err := GenerateKey("\u0430lice"); !errors.Is(err, ErrName) {
		t.Errorf("a mixed-script operator: %v", err)
	}
	if _, err := ParseKey([]byte("not pem")); !errors.Is(err, ErrMalformed) {
		t.Errorf("not PEM: %v", err)
	}
	q := Request{Operation: OpForceRelease, Resource: "conv/x", Reason: "r"}
	now := time.Now()
	for _, v := range []time.Duration{0, MaxValidity + time.Second} {
		if _, err := k.Approve(q, now, v); !errors.Is(err, ErrMalformed) {
			t.Errorf("validity %s: %v", v, err)
		}
	}
	for name, bad := range map[string]Request{
		"unknown operation":       {Operation: "delete-everything", Resource: "conv/x"},
		"no resource":             {Operation: OpForceRelease},
		"fence clear, no region":  {Operation: OpFenceClear, Resource: "conv/x"},
		"force-release, a region": {Operation: OpForceRelease, Resource: "conv/x", Region: "us-east"},
		"a long reason":           {Operation: OpForceRelease, Resource: "conv/x", Reason: strings.Repeat("x", MaxReasonBytes+1)},
	} {
		if _, err := k.Approve(bad, now, time.Minute); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	tok, err := k.Approve(q, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Parse(" " + tok + "\n")
	if err != nil || a.Operator != "alice" || a.Request() != q || a.Expires().Sub(a.Issued()) != time.Minute {
		t.Fatalf("parse: %v %+v", err, a)
	}
}
