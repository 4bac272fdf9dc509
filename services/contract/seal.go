package contract

import (
	"context"
	"time"
)

// An import request may do more than apply a page (issue 16: the end of
// Phase 3 in one cross-region round trip). In this order, at the target:
//
//  1. grant: with a token and GrantUntil, grant (or renew) the token's
//     import grant (ImportGate.GrantImport);
//  2. apply: import the page, if there is one, under the grant;
//  3. seal: revoke the grant, retiring the token, then read the target's
//     slice digests through the user read path.
//
// After a seal nothing of the attempt can land at the target (its token is
// retired in the store, decided under the resource's lock with every
// import), so the digests it returns are what the target will hold at the
// swap: validation compares them with the fenced source's, and the
// separate revoke and digest round trips disappear.
//
// What a redelivered request does: a grant and an import are idempotent
// (ImportGate, Participant.Import); a seal repeated, or a seal whose token
// an earlier seal of the same attempt retired (its step lost to a crash),
// applies nothing, revokes again (harmless) and answers with the digests
// and Refused set. Validation then decides: the same digests as the
// source's mean the earlier seal left the copy complete.

// ImportRequest is one import request as a transport hands it to
// ApplyImport.
type ImportRequest struct {
	// Resource is the resource imported; required to grant or seal (a seal
	// without a page names it only here).
	Resource string
	// Page is the page to apply; nil applies nothing (a seal alone, or a
	// grant alone).
	Page *Page
	// Grant is the migration attempt's token ("" imports ungated);
	// GrantUntil, if set, grants it until then first.
	Grant      string
	GrantUntil time.Time
	// Seal revokes Grant's grant after the page and answers with digests.
	Seal bool
}

// ApplyImport carries out r at participant p, the steps above in order. A
// participant that is not an ImportGate imports ungated: nothing is granted
// or revoked, and a seal only reads the digests. Errors: CodeInvalid (a
// grant or seal without a resource, a page of another resource), the
// participant's own; a grant or import refused with CodeConflict fails the
// request unless it seals (the seal then answers with Refused).
func ApplyImport(ctx context.Context, p Participant, r ImportRequest) (ImportResult, error) {
	if r.Resource == "" && (r.Seal || !r.GrantUntil.IsZero()) {
		return ImportResult{}, Errorf(CodeInvalid, "grant or seal without a resource")
	}
	if r.Page != nil && r.Page.Resource != "" && r.Page.Resource != r.Resource {
		return ImportResult{}, Errorf(CodeInvalid, "page of %q in an import of %q", r.Page.Resource, r.Resource)
	}
	gate, gated := p.(ImportGate)
	var res ImportResult
	refused := func(err error) bool {
		if r.Seal && AsError(err).Code == CodeConflict {
			res.Refused = true
			return true
		}
		return false
	}
	if gated && r.Grant != "" && !r.GrantUntil.IsZero() {
		if err := gate.GrantImport(ctx, r.Resource, r.Grant, r.GrantUntil); err != nil && !refused(err) {
			return ImportResult{}, err
		}
	}
	if r.Page != nil && len(r.Page.Records) > 0 && !res.Refused {
		pg := *r.Page
		pg.Grant = r.Grant
		got, err := p.Import(ctx, pg)
		if err != nil && !refused(err) {
			return ImportResult{}, err
		}
		res.Applied, res.Total = got.Applied, got.Total
	}
	if !r.Seal {
		return res, nil
	}
	if gated && r.Grant != "" {
		if err := gate.RevokeImport(ctx, r.Resource, r.Grant); err != nil {
			return ImportResult{}, err
		}
	}
	d, err := p.Digests(ctx, r.Resource)
	if err != nil {
		return ImportResult{}, err
	}
	res.Sealed, res.Digests = true, d
	return res, nil
}

// FenceExporter is implemented by endpoints that set a fence and export a
// page in one request (issue 16: the write fence of Phase 3 and the first
// delta page in one round trip to the source). The page is exported after
// the fence is set, so under a write fence it is final: the same as any
// later export of the same position. Implementations must be safe for
// concurrent use by any goroutine.
type FenceExporter interface {
	// FenceAndExport sets f at resource, then exports one page by req
	// (req.Resource is resource). exported is false when the far side
	// cannot export in a fence request (the fence is set all the same).
	FenceAndExport(ctx context.Context, migrationID, resource string, f Fence, req ExportRequest) (page PageInfo, exported bool, err error)
}
