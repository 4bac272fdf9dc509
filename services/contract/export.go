package contract

import "fmt"

// ExportMode selects historical or delta export (paper 001 (A2)).
type ExportMode uint8

// Export modes.
const (
	// Historical returns the records committed up to the sync token; the
	// first historical request (SyncToken 0) issues the token.
	Historical ExportMode = iota + 1
	// Delta returns every record created, changed or tombstoned after the
	// sync token.
	Delta
)

// String returns "historical" or "delta".
func (m ExportMode) String() string {
	switch m {
	case Historical:
		return "historical"
	case Delta:
		return "delta"
	}
	return fmt.Sprintf("ExportMode(%d)", uint8(m))
}

// ExportRequest asks for one page of one resource's records.
type ExportRequest struct {
	Resource string     `msgpack:"res"`
	Mode     ExportMode `msgpack:"mode"`
	// SyncToken: for Historical, 0 to issue a new token (the first page), or
	// the token the first page issued; for Delta, the token to export from.
	SyncToken uint64 `msgpack:"tok"`
	// Cursor is the Next of the previous page (0 for the first page).
	Cursor uint64 `msgpack:"cur"`
	// Limit caps the records in the page (0 = DefaultPageLimit).
	Limit int `msgpack:"lim"`
	// Attempt is the migration attempt the export runs for (1, 2, …; 0 for
	// callers outside a migration). It is copied into the page and its
	// page id, so a rescheduled attempt never gets the previous attempt's
	// deduplicated page.
	Attempt uint32 `msgpack:"att,omitempty"`
	// Authority is the source's authority the export runs under (the
	// stamp): a historical export needs a tombstoning primary or an
	// exporting store, a delta export an exporting store (Admit). The
	// participant installs it before it reads, in the same transaction as
	// the sync token of a first page: every delete committed after the
	// token is a tombstone the delta carries.
	Authority Authority `msgpack:"auth"`
	// Inline asks a transport that would publish the page to a stream
	// (contractnats) to return it in the reply instead (PageInfo.Page), so
	// that the import request carries it: one cross-region round trip for a
	// page instead of two, and no synced publish (the orchestrator asks it
	// for every page).
	// A page too large for one message is published as usual. Participants
	// ignore it.
	Inline bool `msgpack:"inl,omitempty"`
}

// DefaultPageLimit is the page size when a request sets none.
const DefaultPageLimit = 500

// Page is one export page.
type Page struct {
	Service  string     `msgpack:"svc"`
	Resource string     `msgpack:"res"`
	Mode     ExportMode `msgpack:"mode"`
	// SyncToken is the token this export runs under (issued by the first
	// historical page).
	SyncToken uint64 `msgpack:"tok"`
	// Cursor is the request's cursor; Next is the cursor for the next page.
	Cursor uint64 `msgpack:"cur"`
	Next   uint64 `msgpack:"next"`
	// More reports whether another page follows.
	More    bool     `msgpack:"more"`
	Records []Record `msgpack:"recs"`
	// Dependents are resources referenced by records of this page that
	// migrate on their own (child migrations), e.g. "media/m1".
	Dependents []string `msgpack:"deps,omitempty"`
	// Attempt is the request's Attempt (see ExportRequest).
	Attempt uint32 `msgpack:"att,omitempty"`
}

// ImportRequest is one import at the target.
type ImportRequest struct {
	// Resource is the resource imported.
	Resource string `msgpack:"res"`
	// Authority is the target's authority the import runs under: an
	// importing store at this revision or a later one (Admit). It is
	// installed before anything else.
	Authority Authority `msgpack:"auth"`
	// Reset removes every record of the resource first: the first page of
	// an attempt's copy, so that a target holding an older copy (a move
	// back within the cleanup window) keeps nothing the source no longer
	// has.
	Reset bool `msgpack:"reset,omitempty"`
	// Page is the page to apply; nil applies nothing.
	Page *Page `msgpack:"page,omitempty"`
	// Digests asks for the target's slice digests, read after the page is
	// applied (ImportResult.Digests): the last delta page's import answers
	// what validation compares with the source.
	Digests bool `msgpack:"digests,omitempty"`
}

// ImportResult reports what an import applied.
type ImportResult struct {
	// Applied is how many records changed the target; a replayed page
	// applies 0.
	Applied int `msgpack:"applied"`
	Total   int `msgpack:"total"`
	// Removed is how many records a Reset removed.
	Removed int `msgpack:"removed,omitempty"`
	// Seq is the resource's change sequence after the import (the sync
	// token a historical export here would issue); 0 when the participant
	// does not say. The orchestrator records the one the last import
	// before the swap answers: a move back copies only the changes above
	// it (the reverse window).
	Seq uint64 `msgpack:"seq,omitempty"`
	// Digests are the target's slice digests when the request asked for
	// them (nil for a resource without live records).
	Digests []SliceDigest `msgpack:"digests,omitempty"`
}
