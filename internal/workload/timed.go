package workload

import "time"

// TimedOp is one post, edit or delete of a message with its call span:
// Start when the call was made, End when it returned; Acked tells whether
// it was acknowledged (an unacknowledged one may have applied, at any time
// after Start).
type TimedOp struct {
	ID         string
	Delete     bool
	Text       string
	Start, End time.Time
	Acked      bool
	// Region served the last answer (api.ServedByHeader), for samples.
	Region string
}

// ListRead is one read of a whole conversation (a page shorter than its
// limit) by any user: what it returned (id → text) and its call span.
type ListRead struct {
	Start, End time.Time
	Items      map[string]string
	// Region served it and API is the index of the API it went through
	// (for samples).
	Region string
	API    int
}

// TimedOp records op on conv.
func (l *Ledger) TimedOp(conv string, op TimedOp) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ops == nil {
		l.ops = map[string][]TimedOp{}
	}
	l.ops[conv] = append(l.ops[conv], op)
}

// TimedOps returns the timed operations on conv's messages.
func (l *Ledger) TimedOps(conv string) []TimedOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]TimedOp(nil), l.ops[conv]...)
}

// ListRead records a whole-conversation read of conv.
func (l *Ledger) ListRead(conv string, r ListRead) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lists == nil {
		l.lists = map[string][]ListRead{}
	}
	l.lists[conv] = append(l.lists[conv], r)
}

// ListReads returns the whole-conversation reads of conv.
func (l *Ledger) ListReads(conv string) []ListRead {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ListRead(nil), l.lists[conv]...)
}
