package contractnats

import (
	"slices"
	"testing"

	cnats "github.com/cutover/cutover/nats"
)

// The reader identity may send no request that changes a service (its
// permissions name them by subject: kept in step here) and publish no
// page; the read-only requests stay open to it.
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
	for _, op := range []string{OpExport, OpDigests, OpSlice} {
		if slices.Contains(deny, SubjectPrefix+".*.*."+op) {
			t.Errorf("the reader may not send the read-only %q", op)
		}
	}
	if !slices.Contains(deny, PagesSubjectPrefix+".>") {
		t.Error("the reader may publish pages")
	}
}
