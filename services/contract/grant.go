package contract

import (
	"context"
	"time"
)

// ImportGate is the target side's import grant (issue 14 #1): a page is
// applied only while an import grant of the page's token is in force at the
// target's store, decided under the store's per-resource lock together with
// the write. The orchestrator grants before it copies, revokes after the
// last delta import (before validation, so nothing lands between validation
// and the swap) and on rollback; a revoked token is retired. A late import
// — a redelivered step on a second worker, a request buffered across a
// reconnect, one queued behind a server's slots — therefore changes
// nothing: it cannot resurrect a delete made at the new primary, put
// unvalidated rows on it, or leave data in a region the resource never
// moved to. Participants and endpoints implement it next to Participant
// and Endpoint; a page carrying a Grant is imported only under it
// (PageInfo.Grant, Page.Grant). Implementations must be safe for concurrent
// use by any goroutine.
type ImportGate interface {
	// GrantImport lets imports under token be applied to resource until
	// expiry; granting again renews (the later expiry wins). A token
	// revoked here before: CodeConflict, nothing changes.
	GrantImport(ctx context.Context, resource, token string, expiry time.Time) error
	// RevokeImport ends token's grant at resource and retires the token.
	// Revoking a token without a grant still retires it.
	RevokeImport(ctx context.Context, resource, token string) error
	// ResetForCopy deletes every record of resource at this target under
	// token's grant and returns how many; the orchestrator calls it before
	// the first page of an attempt's historical copy, so that a region that
	// still holds an older copy (a move back within the cleanup window)
	// keeps nothing the source no longer has (issue 14 #16). Without the
	// grant: CodeConflict, nothing deleted.
	ResetForCopy(ctx context.Context, resource, token string) (int, error)
}
