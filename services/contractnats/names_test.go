package contractnats

import (
	"os"
	"slices"
	"strings"
	"testing"

	cnats "github.com/cutover/cutover/nats"
)

// The reader identity may send no contract request at all (its allowlist
// names no contract subject) and publish no page; the requests that change
// a service are denied by name on top (kept in step here).
func TestReaderMayNotMutate(t *testing.T) {
	p, err := cnats.Permissions(cnats.IdentityReader)
	if err != nil {
		t.Fatal(err)
	}
	deny := p.Publish.Deny
	for _, op := range []string{OpAuthority, OpRepair, OpCleanup, OpImport, OpCheckpoint} {
		if !slices.Contains(deny, SubjectPrefix+".*.*."+op) {
			t.Errorf("the reader may send %q requests", op)
		}
	}
	for _, allow := range p.Publish.Allow {
		if strings.HasPrefix(allow, SubjectPrefix+".") || allow == ">" {
			t.Errorf("the reader may publish %q", allow)
		}
	}
	if !slices.Contains(deny, PagesSubjectPrefix+".>") {
		t.Error("the reader may publish pages")
	}
}

// TestParticipantDocNamesEveryOp: docs/participant.md documents every
// operation a Server serves, with its request and reply, and names every
// golden wire value, so an implementer finds each in it.
func TestParticipantDocNamesEveryOp(t *testing.T) {
	b, err := os.ReadFile("../../docs/participant.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, op := range Ops {
		if strings.Count(doc, "| `"+op+"` |") < 2 {
			t.Errorf("docs/participant.md: operation %q needs a row in the operations table and in the requests and replies table", op)
		}
	}
	for _, g := range goldenValues() {
		if !strings.Contains(doc, "`"+g.name+"`") {
			t.Errorf("docs/participant.md names no golden value %q", g.name)
		}
	}
	if !strings.Contains(doc, "version `"+Version+"`") {
		t.Errorf("docs/participant.md does not give the contract version %s", Version)
	}
}

// Pages are read from the stream leader: direct gets (answered by any
// replica) only on a stream of one replica, where the leader is the only
// server.
func TestPagesConfigDirectGetsOnlyWithOneReplica(t *testing.T) {
	for replicas, want := range map[int]bool{0: true, 1: true, 3: false, 5: false} {
		if got := PagesConfig(replicas).AllowDirect; got != want {
			t.Errorf("PagesConfig(%d).AllowDirect = %v, want %v", replicas, got, want)
		}
	}
}
