package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/workload"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contract"
)

// Config is what one check looks at. Ledger, Convs, Reader and Routing are
// required; every other input switches on the checks that need it.
type Config struct {
	// Ledger holds what the clients saw acknowledged; Convs are the
	// conversations to check.
	Ledger *workload.Ledger
	Convs  []string
	// Reader reads every conversation through the API (which routes to
	// the authoritative region).
	Reader *client.Client
	// Routing reads a resource's routing document from the stream leader.
	Routing func(context.Context, kvrouting.Resource) (*kvrouting.Document, error)
	// Source and Target, when set, are where every resource must end:
	// primary at Target, the old location Source a locked secondary.
	Source, Target string
	// Observer, when set, supplies the committed routing revisions: the
	// stale-token and write-fence analysis and the swap times the
	// old-location check starts from.
	Observer  *Observer
	ClockSkew time.Duration
	// WriteLease is the write-lock expiry the fence is held to.
	WriteLease time.Duration
	// Paused are tokens of holders a nemesis paused.
	Paused map[kvrouting.Token]bool
	// Stamps, when set with Observer, reads the records of a resource at a
	// region (RegionStamps) for the old-location check.
	Stamps Stamps
	// Authorities, when set, reads the authority records of a resource at
	// a region: none may refuse a user request routed by the current
	// routing document at the primary once the run has ended
	// (Invariants.FencedPrimaries).
	Authorities Authorities
	// Regions, with Stamps and Observer, are every region a resource may
	// hold data in; a region that is not the resource's primary may hold
	// its records only while it is an old primary within CleanupWindow
	// (plus CleanupSlack for the cleanup step to run) of the swap that
	// left it (Invariants.TargetLeftovers).
	Regions       []string
	CleanupWindow time.Duration
	CleanupSlack  time.Duration
	// Migrations, when set with Orch, must each be completed or rolled
	// back without a lock of theirs left.
	Migrations []string
	Orch       *orchestrator.Client
	// Patience bounds the retries of a read that fails right after a
	// fault (0 = 20 s): a stream whose leader was just killed answers 503
	// until its election ends.
	Patience time.Duration
}

// Report is a check's outcome: the invariants and what the migration
// check counted.
type Report struct {
	Invariants Invariants
	Migrations Migrations
	// Revisions is the number of routing revisions observed.
	Revisions int
}

// Migrations are the outcomes of Config.Migrations.
type Migrations struct {
	Completed, RolledBack, Unfinished int
	// Reasons counts why migrations ended without completing; StepErrors
	// samples the step failures behind them.
	Reasons    map[string]int
	StepErrors []string
}

// Stamp is one record's id and change times (Unix nanoseconds).
type Stamp struct {
	ID                   string
	UpdatedAt, DeletedAt int64
}

// Stamps reads the records of resource held at region.
type Stamps func(ctx context.Context, region, resource string) ([]Stamp, error)

// Authorities reads the authority records of resource at region (one per
// service).
type Authorities func(ctx context.Context, region, resource string) ([]contract.Authority, error)

// inspector is what the chat services' participants give a checker,
// whatever their storage (Pebble or the participant kit): the authority
// record held and every record with the tombstones.
type inspector interface {
	Held(ctx context.Context, resource string) (contract.Authority, error)
	Records(ctx context.Context, resource string) ([]contract.Record, error)
}

// RegionAuthorities reads authority records from the stores of regions'
// conversation services.
func RegionAuthorities(regions map[string]*chat.Region) Authorities {
	return func(ctx context.Context, region, resource string) ([]contract.Authority, error) {
		reg := regions[region]
		if reg == nil {
			return nil, nil
		}
		var out []contract.Authority
		for _, p := range reg.ParticipantsFor(chat.KindConversation) {
			in, ok := p.(inspector)
			if !ok {
				continue
			}
			a, err := in.Held(ctx, resource)
			if err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, nil
	}
}

// RegionStamps reads records from the stores of regions' conversation
// services.
func RegionStamps(regions map[string]*chat.Region) Stamps {
	return func(ctx context.Context, region, resource string) ([]Stamp, error) {
		reg := regions[region]
		if reg == nil {
			return nil, nil
		}
		var out []Stamp
		for _, p := range reg.ParticipantsFor(chat.KindConversation) {
			in, ok := p.(inspector)
			if !ok {
				continue
			}
			recs, err := in.Records(ctx, resource)
			if err != nil {
				return nil, err
			}
			for _, r := range recs {
				out = append(out, Stamp{ID: r.ID, UpdatedAt: r.UpdatedAt, DeletedAt: r.DeletedAt})
			}
		}
		return out, nil
	}
}

// Run checks every conversation of c and, with c.Migrations, every
// migration. Errors: a read that still fails after c.Patience (the check
// is then incomplete, never passed).
func Run(ctx context.Context, c Config) (*Report, error) {
	if c.Ledger == nil || c.Reader == nil || c.Routing == nil {
		return nil, errors.New("check: Ledger, Reader and Routing are required")
	}
	if c.Patience <= 0 {
		c.Patience = 20 * time.Second
	}
	r := &Report{}
	r.Invariants.WriteLockExpiryMs = float64(c.WriteLease.Milliseconds())
	r.Invariants.ClockSkewMs = float64(c.ClockSkew.Milliseconds())
	if err := c.migrations(ctx, r); err != nil {
		return nil, err
	}
	for _, conv := range c.Convs {
		if err := c.conversation(ctx, r, conv); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// conversation checks one conversation's routing, lock history, messages
// and old location.
func (c Config) conversation(ctx context.Context, r *Report, conv string) error {
	inv := &r.Invariants
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: conv}
	doc, err := settled(ctx, c.Patience, func() (*kvrouting.Document, error) { return c.Routing(ctx, res) })
	if err != nil {
		return fmt.Errorf("check: routing of %s: %w", conv, err)
	}

	// Routing: no lock left, no migration half done, at the target.
	if !doc.Primary.Lock.IsZero() {
		inv.OrphanedLocks++
		inv.sample("orphaned %s lock on %s", doc.Primary.Lock.Type, conv)
	}
	partial := doc.Target != "" || doc.MigrationID != "" || (doc.Secondary != nil && doc.Secondary.Region == doc.Primary.Region)
	if c.Target != "" && doc.Primary.Region == c.Target && c.Source != "" &&
		(doc.Secondary == nil || doc.Secondary.Region != c.Source || doc.Secondary.Lock.Type != kvrouting.LockSecondary) {
		partial = true
	}
	if partial {
		inv.PartialCutovers++
		inv.sample("partial cutover of %s: primary %s target %q migration %q secondary %+v", conv, doc.Primary.Region, doc.Target, doc.MigrationID, doc.Secondary)
	}
	if c.Target != "" && doc.Primary.Region != c.Target {
		inv.NotAtTarget++
		inv.sample("%s not at the target: %s", conv, doc.Primary.Region)
	}

	// No store at the authoritative region refuses what routing allows.
	if c.Authorities != nil {
		as, err := c.Authorities(ctx, doc.Primary.Region, res.String())
		if err != nil {
			return fmt.Errorf("check: authority of %s at %s: %w", conv, doc.Primary.Region, err)
		}
		routed := doc.AuthorityAt(doc.Primary.Region, c.ClockSkew)
		for _, a := range as {
			if d := contract.Admit(a, contract.OpCreate, routed, time.Now()); d.Verdict != contract.Allow {
				inv.FencedPrimaries++
				inv.sample("the primary %s of %s refuses a new message routed by revision %d (%s): it holds %s (%s); routing: last migration %s, last swap %+v",
					doc.Primary.Region, conv, doc.Revision, d.Verdict, a, d.Why, doc.LastMigrationID, doc.LastSwap)
				break
			}
		}
	}

	// The lock history, as the store committed it.
	var lastSwap time.Time
	var history []Revision
	if c.Observer != nil {
		// The observer must have caught up with the final revision: a
		// history it has not received is not one without a swap.
		if err := c.Observer.CatchUp(ctx, res, doc.Revision, 2*time.Second); err != nil {
			return err
		}
		hs := c.Observer.History(res.String())
		history = hs
		r.Revisions += len(hs)
		stale, pausedOps, fence, swap, ss := LockAnalysis(hs, c.ClockSkew, c.Paused)
		inv.StaleTokenOps += stale
		inv.PausedHolderOps += pausedOps
		inv.MaxWriteFenceMs = max(inv.MaxWriteFenceMs, float64(fence.Microseconds())/1000)
		lastSwap = swap
		for _, s := range ss {
			inv.sample("%s", s)
		}
	}

	// Acknowledged writes present with their last content, acknowledged
	// deletes absent, read through the API at the authoritative region.
	seen, err := c.read(ctx, conv, doc.Primary.Region, inv)
	if err != nil {
		return err
	}
	want := c.Ledger.Messages(conv)
	for id, st := range want {
		text, ok := seen[id]
		switch {
		case !ok && (st.Deleted || st.MaybeDeleted):
		case ok && !st.Deleted && text == st.Text:
		case ok && slices.Contains(st.Maybe, text):
			inv.Uncertain++
		case st.Deleted && ok:
			inv.Resurrected++
			inv.sample("resurrected %s/%s: %q", conv, id, text)
		default:
			inv.LostWrites++
			inv.sample("lost %s/%s: want %q, present=%v text %q", conv, id, st.Text, ok, text)
		}
	}
	for id, text := range seen {
		if _, ok := want[id]; !ok {
			inv.Unacknowledged++
			inv.sample("unacknowledged %s/%s: %q", conv, id, text)
		}
	}
	if err := c.reactions(ctx, inv, conv); err != nil {
		return err
	}
	c.reads(inv, conv)

	if err := c.leftovers(ctx, inv, conv, res, doc, history); err != nil {
		return err
	}
	if c.Observer != nil {
		servedWrites(inv, conv, c.Ledger.ServedWrites(conv), history)
		userFences(inv, conv, c.Ledger.Refusals(conv), history, c.ClockSkew)
	}

	// No user write accepted at the old location after the last swap.
	if c.Stamps == nil || doc.Secondary == nil || lastSwap.IsZero() {
		return nil
	}
	stamps, err := c.Stamps(ctx, doc.Secondary.Region, res.String())
	if err != nil {
		return fmt.Errorf("check: records of %s at %s: %w", conv, doc.Secondary.Region, err)
	}
	for _, s := range stamps {
		if s.UpdatedAt > lastSwap.UnixNano() || s.DeletedAt > lastSwap.UnixNano() {
			inv.DualAuthorityWrites++
			inv.sample("write at the old location %s of %s after the swap: %s", doc.Secondary.Region, conv, s.ID)
		}
	}
	return nil
}

// read returns conv's messages (id → text) as the API serves them. A
// conversation gone at its authoritative region reads as empty: every
// acknowledged message in it then counts as lost.
func (c Config) read(ctx context.Context, conv, primary string, inv *Invariants) (map[string]string, error) {
	return settled(ctx, c.Patience, func() (map[string]string, error) {
		seen := map[string]string{}
		for m, err := range c.Reader.AllMessages(ctx, conv, client.ListOptions{Limit: 200}) {
			var ae *client.APIError
			if errors.As(err, &ae) && ae.Code == client.CodeNotFound {
				inv.sample("conversation %s missing at its primary %s", conv, primary)
				return map[string]string{}, nil
			}
			if err != nil {
				return nil, fmt.Errorf("check: read %s: %w", conv, err)
			}
			seen[m.ID] = m.Text
		}
		return seen, nil
	})
}

// migrations checks that every migration of c.Migrations completed or
// rolled back cleanly (terminal, and no lock of it left in the routing
// document).
func (c Config) migrations(ctx context.Context, r *Report) error {
	if c.Orch == nil {
		return nil
	}
	m := &r.Migrations
	inv := &r.Invariants
	for _, id := range c.Migrations {
		st, err := settled(ctx, c.Patience, func() (*events.State, error) {
			st, _, err := c.Orch.State(ctx, id)
			return st, err
		})
		if err != nil {
			return fmt.Errorf("check: state of %s: %w", id, err)
		}
		switch {
		case st.Status == events.StatusCompleted:
			m.Completed++
		case st.Status.Terminal():
			res, err := kvrouting.ParseResource(st.Resource)
			if err != nil {
				return err
			}
			doc, err := settled(ctx, c.Patience, func() (*kvrouting.Document, error) { return c.Routing(ctx, res) })
			if err != nil {
				return err
			}
			if doc.MigrationID == id || (st.Token != "" && doc.Primary.Lock.Token == kvrouting.Token(st.Token)) {
				inv.NotClean++
				inv.sample("migration %s (%s) ended %s but left its lock", id, st.Resource, st.Status)
			} else {
				m.RolledBack++
			}
			if m.Reasons == nil {
				m.Reasons = map[string]int{}
			}
			m.Reasons[ReasonClass(st.Status, st.Reason)]++
			if len(m.StepErrors) < 8 {
				c.stepErrors(ctx, id, m)
			}
		default:
			m.Unfinished++
			inv.NotClean++
			inv.sample("migration %s (%s) unfinished: %s/%s", id, st.Resource, st.Phase, st.Status)
		}
	}
	return nil
}

// stepErrors samples the step failures of migration id.
func (c Config) stepErrors(ctx context.Context, id string, m *Migrations) {
	hs, err := c.Orch.History(ctx, id)
	if err != nil {
		return
	}
	for _, e := range hs {
		b, ok := events.BodyAs[events.StepFailed](e)
		if !ok {
			continue
		}
		if len(m.StepErrors) < 8 {
			m.StepErrors = append(m.StepErrors, fmt.Sprintf("%s %s@%s: %s", id, b.Phase, e.Time.Format("15:04:05.000"), b.Error))
		}
	}
}

// ReasonClass shortens an end reason to a class for a report: the status
// and the reason up to its first colon (ids and tokens follow it).
func ReasonClass(status events.Status, reason string) string {
	if i := strings.IndexAny(reason, ":("); i > 0 {
		reason = reason[:i]
	}
	if len(reason) > 60 {
		reason = reason[:60]
	}
	return fmt.Sprintf("%s: %s", status, strings.TrimSpace(reason))
}

// settled retries read for up to patience: the checks run right after the
// last fault, and a stream whose leader was just killed answers 503 until
// its election ends. Reads are idempotent; an error that outlasts the
// patience is returned.
func settled[T any](ctx context.Context, patience time.Duration, read func() (T, error)) (T, error) {
	deadline := time.Now().Add(patience)
	for {
		v, err := read()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// leftovers counts a resource whose records are held in a region that is
// neither its primary nor an old primary within the cleanup window of the
// swap that left it. It needs the resource's whole routing history (its
// first observed revision the registration); otherwise it checks nothing.
func (c Config) leftovers(ctx context.Context, inv *Invariants, conv string, res kvrouting.Resource, doc *kvrouting.Document, hs []Revision) error {
	if c.Stamps == nil || len(c.Regions) == 0 || len(hs) == 0 {
		return nil
	}
	if first := hs[0].Doc; first.LastMigrationID != "" || first.MigrationID != "" {
		return nil // the history starts after the registration
	}
	left := map[string]time.Time{} // region → when it last stopped being the primary
	wasPrimary := map[string]bool{hs[0].Doc.Primary.Region: true}
	for i := 1; i < len(hs); i++ {
		prev, cur := hs[i-1].Doc.Primary.Region, hs[i].Doc.Primary.Region
		wasPrimary[cur] = true
		if cur != prev {
			left[prev] = hs[i].Created
		}
	}
	now := time.Now()
	for _, region := range c.Regions {
		if region == doc.Primary.Region {
			continue
		}
		if wasPrimary[region] && now.Before(left[region].Add(c.CleanupWindow+c.CleanupSlack)) {
			continue
		}
		stamps, err := c.Stamps(ctx, region, res.String())
		if err != nil {
			return fmt.Errorf("check: records of %s at %s: %w", conv, region, err)
		}
		if len(stamps) > 0 {
			inv.TargetLeftovers++
			inv.sample("%d records of %s left at %s (primary %s, was primary there: %v)", len(stamps), conv, region, doc.Primary.Region, wasPrimary[region])
		}
	}
	return nil
}

// reactions checks conv's ledgered reactions through the API: an
// acknowledged reaction absent is a lost write, an acknowledged removal
// present again (a physical delete undone) is a resurrection; reactions
// with an unknown last outcome may be either.
func (c Config) reactions(ctx context.Context, inv *Invariants, conv string) error {
	byMsg := map[string]map[workload.ReactionKey]workload.Reaction{}
	for k, r := range c.Ledger.Reactions(conv) {
		if byMsg[k.Message] == nil {
			byMsg[k.Message] = map[workload.ReactionKey]workload.Reaction{}
		}
		byMsg[k.Message][k] = r
	}
	for msg, want := range byMsg {
		seen, err := settled(ctx, c.Patience, func() (map[workload.ReactionKey]bool, error) {
			rs, err := c.Reader.Reactions(ctx, conv, msg)
			var ae *client.APIError
			if errors.As(err, &ae) && ae.Code == client.CodeNotFound {
				return map[workload.ReactionKey]bool{}, nil
			}
			if err != nil {
				return nil, fmt.Errorf("check: reactions of %s/%s: %w", conv, msg, err)
			}
			out := map[workload.ReactionKey]bool{}
			for _, r := range rs {
				out[workload.ReactionKey{Message: msg, User: r.User, Emoji: r.Emoji}] = true
			}
			return out, nil
		})
		if err != nil {
			return err
		}
		for k, r := range want {
			switch {
			case r.Maybe:
			case r.Present && !seen[k]:
				inv.LostWrites++
				inv.sample("lost reaction %s/%s %s by %s", conv, msg, k.Emoji, k.User)
			case !r.Present && seen[k]:
				inv.Resurrected++
				inv.sample("resurrected reaction %s/%s %s by %s", conv, msg, k.Emoji, k.User)
			}
		}
	}
	return nil
}

// reads replays, per message its writer read, the writer's operations and
// reads in order: a read must show the state after the last acknowledged
// operation before it, or one a write of unknown outcome before it could
// have left (such a write may land late, so it stays possible).
func (c Config) reads(inv *Invariants, conv string) {
	listReads(inv, conv, c.Ledger.TimedOps(conv), c.Ledger.ListReads(conv))
	c.writerReads(inv, conv)
}

// listReads checks every whole-conversation read, by any user, against the
// timed operations on the conversation's messages: for each
// message whose last operation acknowledged before the read started is L,
// the read shows L's state — present with L's text after a post or an edit,
// absent after a delete — or the state of an operation that may have applied
// during the read (one that started before the read ended and was not
// acknowledged before L; an unacknowledged one may apply at any time). A
// deleted message never shows again (ids are not reused). Messages with no
// operation acknowledged before the read are not checked.
func listReads(inv *Invariants, conv string, ops []workload.TimedOp, reads []workload.ListRead) {
	byID := map[string][]workload.TimedOp{}
	for _, op := range ops {
		byID[op.ID] = append(byID[op.ID], op)
	}
	for _, r := range reads {
		for id, os := range byID {
			var last *workload.TimedOp
			for i := range os {
				if os[i].Acked && os[i].End.Before(r.Start) && (last == nil || os[i].End.After(last.End)) {
					last = &os[i]
				}
			}
			if last == nil {
				continue
			}
			texts := map[string]bool{}
			mayDelete := last.Delete
			if !last.Delete {
				texts[last.Text] = true
			}
			for _, op := range os {
				if op.Start.Before(r.End) && (!op.Acked || op.End.After(last.End)) {
					if op.Delete {
						mayDelete = true
					} else {
						texts[op.Text] = true
					}
				}
			}
			text, present := r.Items[id]
			switch {
			case present && last.Delete:
				inv.StaleReads++
				inv.sample("stale read of %s at %s (served by %s through API %d): %s, deleted (acknowledged %s at %s), shows again", conv, r.Start.Format("15:04:05.000"), r.Region, r.API, id, last.End.Format("15:04:05.000"), last.Region)
			case present && !texts[text]:
				inv.StaleReads++
				inv.sample("stale read of %s at %s (served by %s through API %d): %s shows %q, acknowledged %q at %s (%s)", conv, r.Start.Format("15:04:05.000"), r.Region, r.API, id, text, last.Text, last.End.Format("15:04:05.000"), last.Region)
			case !present && !mayDelete:
				inv.StaleReads++
				inv.sample("stale read of %s at %s (served by %s through API %d): %s missing, acknowledged %q at %s (%s)", conv, r.Start.Format("15:04:05.000"), r.Region, r.API, id, last.Text, last.End.Format("15:04:05.000"), last.Region)
			}
		}
	}
}

// writerReads checks the reads of a message by its own writer.
func (c Config) writerReads(inv *Invariants, conv string) {
	type state struct {
		found bool
		text  string
	}
	for id, es := range c.Ledger.History(conv) {
		cur := state{}
		var maybe []state
		for _, e := range es {
			switch e.Kind {
			case workload.EventWrite, workload.EventDelete:
				s := state{found: e.Kind == workload.EventWrite, text: e.Text}
				if e.Acked {
					cur = s
				} else {
					maybe = append(maybe, s)
				}
			case workload.EventRead:
				obs := state{found: e.Found, text: e.Text}
				if obs != cur && !slices.Contains(maybe, obs) {
					inv.StaleReads++
					inv.sample("stale read of %s/%s by its writer: found=%v %q, want found=%v %q", conv, id, obs.found, obs.text, cur.found, cur.text)
				}
			}
		}
	}
}

// tokenOwner names the migration (and attempt) that held token, from the
// histories of c.Migrations: the evidence a stranded fence needs. It reads
// every history, so it runs only when a violation is found.
func (c Config) tokenOwner(ctx context.Context, token string) string {
	if c.Orch == nil || token == "" {
		return "an unknown token"
	}
	for _, id := range c.Migrations {
		hs, err := c.Orch.History(ctx, id)
		if err != nil {
			continue
		}
		for _, e := range hs {
			if e.State != nil && e.State.Token == token {
				last := hs[len(hs)-1]
				if last.State == nil {
					last = e
				}
				var types []string
				for _, x := range hs {
					types = append(types, x.Type)
				}
				return fmt.Sprintf("migration %s attempt %d (%s → %s, now %s/%s; events %s)", id, e.State.Attempt,
					e.State.Source, e.State.Target, last.State.Phase, last.State.Status, strings.Join(types, ","))
			}
		}
	}
	return "a token of no tracked migration"
}

// servedWrites checks, for every acknowledged write whose serving region
// the ledger knows, that the region was the resource's primary at some
// instant between the call and the acknowledgement, by the routing history
// the store committed (each revision's time is the store's). It covers
// every swap of the resource, from the swap's routing revision on: a write
// accepted at an old location after a swap, before the write fence or the
// secondary lock stopped it, is a dual-authority write even if the
// resource later moved back there or the old copy was cleaned up.
func servedWrites(inv *Invariants, conv string, ws []workload.Served, hs []Revision) {
	if len(hs) == 0 {
		return
	}
	for _, w := range ws {
		if wasPrimary(hs, w.Region, w.Start, w.End) {
			continue
		}
		inv.DualAuthorityWrites++
		inv.sample("%s of %s accepted at %s between %s and %s, while the primary was %s",
			w.What, conv, w.Region, w.Start.Format("15:04:05.000"), w.End.Format("15:04:05.000"), primaryAt(hs, w.Start))
	}
}

// wasPrimary reports whether region was the primary in hs at some instant
// of [from, to]. Before the first revision the resource did not exist (a
// write then was accepted by the create that registered it, at the first
// revision's primary).
func wasPrimary(hs []Revision, region string, from, to time.Time) bool {
	if primaryAt(hs, from) == region {
		return true
	}
	for _, h := range hs {
		if h.Created.After(from) && !h.Created.After(to) && h.Doc != nil && h.Doc.Primary.Region == region {
			return true
		}
	}
	return false
}

// primaryAt is the primary region in hs at t: that of the last revision at
// or before t (the first one's before it).
func primaryAt(hs []Revision, t time.Time) string {
	at := ""
	for _, h := range hs {
		if h.Doc == nil {
			continue
		}
		if at == "" || !h.Created.After(t) {
			at = h.Doc.Primary.Region
		}
		if h.Created.After(t) {
			break
		}
	}
	return at
}

// lockSpan is one write lock in force: from the revision that set it (a
// token's write lock where the revision before held none of it in force)
// to the revision that removed it (plus visibilityLag) or its last expiry
// plus the skew, whichever came first. Renewals extend it.
type lockSpan struct {
	tok        kvrouting.Token
	start, end time.Time
}

// visibilityLag is how long after a revision's time a reader may still get
// the revision before it: the time is the stream leader's stamp when it
// stores the update, and a read returns it only once the update is
// committed (in an R3 cluster, after a quorum's synced writes). A lock is
// therefore counted in force until its removal's time plus this lag (chaos
// found a write refused under a write lock 36 ms after the swap's stamp).
const visibilityLag = 250 * time.Millisecond

// writeLockSpans returns the write locks in force in hs, in order.
func writeLockSpans(hs []Revision, skew time.Duration) []lockSpan {
	var out []lockSpan
	var cur *lockSpan
	var exp time.Time
	for _, h := range hs {
		if h.Doc == nil {
			continue
		}
		l := h.Doc.Primary.Lock
		if cur != nil && (l.Type != kvrouting.LockWrite || l.Token != cur.tok || h.Created.After(exp)) {
			cur.end = h.Created.Add(visibilityLag)
			if e := exp.Add(skew); e.Before(cur.end) {
				cur.end = e
			}
			out = append(out, *cur)
			cur = nil
		}
		if l.Type != kvrouting.LockWrite {
			continue
		}
		if cur == nil {
			cur = &lockSpan{tok: l.Token, start: h.Created}
		}
		exp = l.Expiry
	}
	if cur != nil {
		cur.end = exp.Add(skew)
		out = append(out, *cur)
	}
	return out
}

// userFences holds every 423 refusal of a new message through the
// up-to-date API (API 0) to the write locks of the routing history: a
// refusal while no write lock was in force at any instant of its request is
// a RefusalWithoutLock; within one lock, the span from the first refusal's
// answer to the last one's sending is the fence users met (uncapped: it
// ends where the refusals end, not at an expiry).
func userFences(inv *Invariants, conv string, rs []workload.Refusal, hs []Revision, skew time.Duration) {
	if len(hs) == 0 || len(rs) == 0 {
		return
	}
	spans := writeLockSpans(hs, skew)
	type met struct{ firstEnd, lastStart time.Time }
	byLock := map[int]*met{}
	for _, r := range rs {
		// Only refusals of a write lock or of its fence hold writes;
		// "moved" and its kin redirect (the server re-resolves; a client
		// meets them only when that failed, under a leader kill).
		if r.API != 0 || !(strings.Contains(r.Why, `"lock":"write lock"`) || strings.Contains(r.Why, `"lock":"`+contract.LockWriteFence+`"`)) {
			continue
		}
		i := slices.IndexFunc(spans, func(s lockSpan) bool { return !s.start.After(r.End) && !s.end.Before(r.Start) })
		if i < 0 {
			inv.RefusalsWithoutLock++
			inv.sample("new message on %s refused with 423 between %s and %s with no write lock in force (primary %s): %s",
				conv, r.Start.Format("15:04:05.000"), r.End.Format("15:04:05.000"), primaryAt(hs, r.Start), r.Why)
			continue
		}
		m := byLock[i]
		if m == nil {
			m = &met{firstEnd: r.End, lastStart: r.Start}
			byLock[i] = m
		}
		if r.End.Before(m.firstEnd) {
			m.firstEnd = r.End
		}
		if r.Start.After(m.lastStart) {
			m.lastStart = r.Start
		}
	}
	for _, m := range byLock {
		if d := m.lastStart.Sub(m.firstEnd); d > 0 {
			inv.MaxUserWriteFenceMs = max(inv.MaxUserWriteFenceMs, float64(d.Microseconds())/1000)
		}
	}
}
