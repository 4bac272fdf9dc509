package contractnats

import (
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
