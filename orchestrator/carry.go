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

// carriedPage is one exported page and the request that exported it.
type carriedPage struct {
	req contract.ExportRequest
	pi  PageInfo
}

// carryMax bounds the attempts an attemptMemory holds: entries of attempts
// whose next step ran elsewhere are dropped wholesale when it is reached.
const carryMax = 10_000

// attemptMemory keeps values by service for one attempt (token) of each
// migration, shared by the workers of one process; each is taken once.
type attemptMemory[T any] struct {
	mu sync.Mutex
	m  map[string]attemptValues[T] // by migration id
}

type attemptValues[T any] struct {
	token string
	by    map[string]T // by service
}

// put keeps v for service of st's attempt, dropping what an earlier
// attempt left.
func (a *attemptMemory[T]) put(st *events.State, service string, v T) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.m[st.ID]
	if !ok || c.token != st.Token {
		if a.m == nil || len(a.m) >= carryMax {
			a.m = map[string]attemptValues[T]{}
		}
		c = attemptValues[T]{token: st.Token, by: map[string]T{}}
		a.m[st.ID] = c
	}
	c.by[service] = v
}

// take takes the value kept for service of st's attempt, if there is one
// and usable says it may be used (it stays otherwise).
func (a *attemptMemory[T]) take(st *events.State, service string, usable func(T) bool) (T, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var zero T
	c, ok := a.m[st.ID]
	if !ok || c.token != st.Token {
		return zero, false
	}
	v, ok := c.by[service]
	if !ok || (usable != nil && !usable(v)) {
		return zero, false
	}
	delete(c.by, service)
	if len(c.by) == 0 {
		delete(a.m, st.ID)
	}
	return v, true
}

// forget drops everything kept (tests: as if another process ran the
// step before).
func (a *attemptMemory[T]) forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.m)
}

// processCarry holds the carried first delta pages.
var processCarry attemptMemory[carriedPage]

// carry keeps pages (by service) for st's delta step.
func carry(st *events.State, pages map[string]carriedPage) {
	for svc, p := range pages {
		processCarry.put(st, svc, p)
	}
}

// carried takes the page carried for service's delta export req of st, if
// one was exported by the request that set the write fence at that same
// position.
func carried(st *events.State, service string, req contract.ExportRequest) (PageInfo, bool) {
	cp, ok := processCarry.take(st, service, func(cp carriedPage) bool {
		return cp.req.Mode == req.Mode && cp.req.Cursor == req.Cursor && cp.req.SyncToken == req.SyncToken
	})
	return cp.pi, ok
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

// processCopies holds the target copies.
var processCopies attemptMemory[targetCopy]

// keepTargetCopy keeps what service's last historical import of st's
// attempt answered.
func keepTargetCopy(st *events.State, service string, r contract.ImportResult) {
	processCopies.put(st, service, targetCopy{seq: r.Seq, digests: nonNil(r.Digests)})
}

// takeTargetCopy takes the copy kept for service in st's attempt.
func takeTargetCopy(st *events.State, service string) (targetCopy, bool) {
	return processCopies.take(st, service, nil)
}
