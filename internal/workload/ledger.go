package workload

import (
	"maps"
	"slices"
	"sync"
)

// Msg is what the clients know of one message: its last acknowledged state
// (Text, or Deleted), plus the outcomes of writes whose reply never came
// (cancelled in flight when the traffic stopped, or failed without a clear
// answer). Those may or may not have committed, so a checker accepts them
// too, and only them.
type Msg struct {
	Text    string
	Deleted bool
	// Maybe are texts of posts and edits with unknown outcome;
	// MaybeDeleted is a delete with unknown outcome.
	Maybe        []string
	MaybeDeleted bool
}

// Ledger records every message operation the clients attempted and how it
// ended: the ground truth of "nothing acknowledged is lost or resurrected".
// Safe for concurrent use.
type Ledger struct {
	mu     sync.Mutex
	msgs   map[string]map[string]*Msg // conversation → message id → state
	reacts map[string]map[ReactionKey]*Reaction
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{msgs: map[string]map[string]*Msg{}} }

// Acked records an acknowledged post or edit of (conv, id) with text.
func (l *Ledger) Acked(conv, id, text string) { l.set(conv, id, Msg{Text: text}) }

// AckedDelete records an acknowledged delete of (conv, id).
func (l *Ledger) AckedDelete(conv, id string) { l.set(conv, id, Msg{Deleted: true}) }

// Uncertain records a post or edit (text) or a delete (deleted) of (conv,
// id) whose outcome is unknown.
func (l *Ledger) Uncertain(conv, id, text string, deleted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.conv(conv)
	st := m[id]
	if st == nil {
		st = &Msg{Deleted: true} // a post that may not have committed: absent is fine
		m[id] = st
	}
	if deleted {
		st.MaybeDeleted = true
	} else {
		st.Maybe = append(st.Maybe, text)
	}
}

// Messages returns a copy of what the ledger knows of conv's messages.
func (l *Ledger) Messages(conv string) map[string]Msg {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]Msg, len(l.msgs[conv]))
	for id, m := range l.msgs[conv] {
		c := *m
		c.Maybe = slices.Clone(m.Maybe)
		out[id] = c
	}
	return out
}

// Conversations are the conversations the ledger knows, sorted.
func (l *Ledger) Conversations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.msgs))
}

func (l *Ledger) set(conv, id string, s Msg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conv(conv)[id] = &s
}

func (l *Ledger) conv(conv string) map[string]*Msg {
	m := l.msgs[conv]
	if m == nil {
		m = map[string]*Msg{}
		l.msgs[conv] = m
	}
	return m
}

// ReactionKey names one user's emoji reaction to one message.
type ReactionKey struct{ Message, User, Emoji string }

// Reaction is what the clients know of one reaction: its last acknowledged
// state, or Maybe when the last change's outcome is unknown (either state
// is then acceptable). A removed reaction is a physical delete at the
// reactions service (a tombstone only under a hard-delete fence), so a
// reaction that comes back is a resurrection.
type Reaction struct {
	Present, Maybe bool
}

// AckedReaction records an acknowledged add (present) or remove of a
// reaction.
func (l *Ledger) AckedReaction(conv string, k ReactionKey, present bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reactionsOf(conv)[k] = &Reaction{Present: present}
}

// UncertainReaction records a reaction change whose outcome is unknown.
func (l *Ledger) UncertainReaction(conv string, k ReactionKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.reactionsOf(conv)
	if r := m[k]; r != nil {
		r.Maybe = true
		return
	}
	m[k] = &Reaction{Maybe: true}
}

// Reactions returns a copy of what the ledger knows of conv's reactions.
func (l *Ledger) Reactions(conv string) map[ReactionKey]Reaction {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[ReactionKey]Reaction, len(l.reacts[conv]))
	for k, r := range l.reacts[conv] {
		out[k] = *r
	}
	return out
}

func (l *Ledger) reactionsOf(conv string) map[ReactionKey]*Reaction {
	if l.reacts == nil {
		l.reacts = map[string]map[ReactionKey]*Reaction{}
	}
	m := l.reacts[conv]
	if m == nil {
		m = map[ReactionKey]*Reaction{}
		l.reacts[conv] = m
	}
	return m
}
