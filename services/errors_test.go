package services_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// TestFencedErrorIsHonest: a store fence's 423 names the lock class, not
// the store, and hints when a retry will succeed: a Phase 3 write fence the
// rest of ExpectedWriteLock (not its expiry, an hour away here); a post-swap
// fence 0 (the resource has moved: resolve it again).
func TestFencedErrorIsHonest(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	write := &store.FencedError{Fence: contract.Fence{Level: contract.FenceWrite, SetAt: now.Add(-200 * time.Millisecond), Expiry: now.Add(time.Hour)}, Now: now}
	e := services.ToError(write)
	if e.Code != contract.CodeLocked || e.RetryAfter != kvrouting.ExpectedWriteLock-200*time.Millisecond || e.Lock != "fence write" || strings.Contains(e.Message, "store") {
		t.Fatalf("write fence: %+v", e)
	}
	old := &store.FencedError{Fence: contract.Fence{Level: contract.FenceWrite, SetAt: now.Add(-time.Minute), Expiry: now.Add(time.Hour)}, Now: now}
	if e := services.ToError(old); e.RetryAfter != kvrouting.MinRetryHint {
		t.Fatalf("a write fence held longer than expected: %+v", e)
	}
	moved := &store.FencedError{Fence: contract.Fence{Level: contract.FenceWrite, SetAt: now, Expiry: now.Add(time.Hour), SwapRev: 7}, Now: now}
	if e := services.ToError(moved); e.Code != contract.CodeLocked || e.RetryAfter != 0 || e.Lock != "moved" || !strings.Contains(e.Message, "moved") {
		t.Fatalf("post-swap fence: %+v", e)
	}
}
