package orchestrator

import (
	"sync"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
)

// The first delta page rides in the request that installs the write fence:
// the step that takes the write lock asks every source service for its
// first delta page, inline, stamped with the write lock (exporting), which
// the service installs before it reads; the delta step that follows
// imports those pages instead of asking the source again. With the source
// in another region than the orchestrators, Phase 3 then reaches it once
// instead of twice.
//
// The pages are kept in memory between the two steps (the step that
// escalates and the delta step run one after the other in the same
// delivery, usually on the same worker). They are only an optimisation:
// a page exported after the write fence was installed is final while the
// fence holds (no write reaches the source), so it equals what the delta
// step would export at the same position. A page missing — another worker
// took the delta step, the process restarted, the export failed — is
// exported by the delta step. A carried page
// is used once, for its own attempt (token) and position.

// carriedPages are the first delta pages of one attempt, by service.
type carriedPages struct {
	token string
	pages map[string]carriedPage
}

// carriedPage is one exported page and the request that exported it.
type carriedPage struct {
	req contract.ExportRequest
	pi  PageInfo
}

// carryMax bounds the carried attempts: entries of attempts whose delta
// step ran elsewhere are dropped wholesale when it is reached.
const carryMax = 10_000

// processCarry is shared by the workers of one process.
var processCarry = struct {
	sync.Mutex
	m map[string]carriedPages
}{m: map[string]carriedPages{}}

// carry keeps pages (by service) for st's delta step.
func carry(st *events.State, pages map[string]carriedPage) {
	if len(pages) == 0 {
		return
	}
	processCarry.Lock()
	defer processCarry.Unlock()
	if len(processCarry.m) >= carryMax {
		clear(processCarry.m)
	}
	processCarry.m[st.ID] = carriedPages{token: st.Token, pages: pages}
}

// carried takes the page carried for service's delta export req of st, if
// one was exported by the request that set the write fence at that same
// position.
func carried(st *events.State, service string, req contract.ExportRequest) (PageInfo, bool) {
	processCarry.Lock()
	defer processCarry.Unlock()
	c, ok := processCarry.m[st.ID]
	if !ok || c.token != st.Token {
		return PageInfo{}, false
	}
	cp, ok := c.pages[service]
	if !ok || cp.req.Mode != req.Mode || cp.req.Cursor != req.Cursor || cp.req.SyncToken != req.SyncToken {
		return PageInfo{}, false
	}
	delete(c.pages, service)
	if len(c.pages) == 0 {
		delete(processCarry.m, st.ID)
	}
	return cp.pi, true
}

// deltaRequest is the export request of p's next delta page of st.
func (w *Worker) deltaRequest(st *events.State, p events.ServiceProgress) contract.ExportRequest {
	return contract.ExportRequest{Resource: st.Resource, Mode: contract.Delta, SyncToken: p.SyncToken, Cursor: p.DeltaCursor,
		Limit: w.cfg.PageLimit, Attempt: uint32(max(st.Attempt, 0)), Inline: true}
}

// The target's copy after a service's last historical import (the
// import's ImportResult: its change sequence and slice digests) is kept
// for the delta step too: when the delta is empty (the source's first
// delta page, read under the write fence, has nothing and no more), the
// step imports nothing at the target and validation compares the source's
// digests with these, so Phase 3 does not reach the target at all. Nothing
// can change the target in between: it refuses users (importing), every
// other import of the attempt carries a page already applied, a second
// reset at the same revision removes nothing, and requests of older
// attempts are stale (the authority model checks "no change at the target
// after its copy's digests"). The swap records the sequence as the copy's
// TargetSeq (the reverse window). Missing (another process ran the
// historical copy), validation reads the target's digests, and the swap
// records no sequence: a move back copies everything.

// targetCopy is the target's copy of one service after its last historical
// import.
type targetCopy struct {
	seq     uint64
	digests []contract.SliceDigest
}

// carriedCopies are one attempt's target copies, by service.
type carriedCopies struct {
	token  string
	copies map[string]targetCopy
}

// processCopies is shared by the workers of one process.
var processCopies = struct {
	sync.Mutex
	m map[string]carriedCopies
}{m: map[string]carriedCopies{}}

// keepTargetCopy keeps what service's last historical import of st's
// attempt answered.
func keepTargetCopy(st *events.State, service string, r contract.ImportResult) {
	processCopies.Lock()
	defer processCopies.Unlock()
	c, ok := processCopies.m[st.ID]
	if !ok || c.token != st.Token {
		if len(processCopies.m) >= carryMax {
			clear(processCopies.m)
		}
		c = carriedCopies{token: st.Token, copies: map[string]targetCopy{}}
		processCopies.m[st.ID] = c
	}
	c.copies[service] = targetCopy{seq: r.Seq, digests: nonNil(r.Digests)}
}

// takeTargetCopy takes the copy kept for service in st's attempt.
func takeTargetCopy(st *events.State, service string) (targetCopy, bool) {
	processCopies.Lock()
	defer processCopies.Unlock()
	c, ok := processCopies.m[st.ID]
	if !ok || c.token != st.Token {
		return targetCopy{}, false
	}
	tc, ok := c.copies[service]
	delete(c.copies, service)
	if len(c.copies) == 0 {
		delete(processCopies.m, st.ID)
	}
	return tc, ok
}
