package model

import "fmt"

// Explore enumerates every state reachable from the initial one within
// cfg's scope, breadth first, and checks the invariants on every state and
// every transition. It keeps the first (shortest) counterexample of each
// broken invariant.
func Explore(cfg Config) Result {
	cfg.ensureDefaults()
	init := State{Store: doc{Rev: 1, Primary: regS}}
	n, fs := search(init, cfg.StopAtFirst, func(s State) string { return checkState(&cfg, s) },
		func(s State, emit func(string, State, string)) { successors(&cfg, s, emit) },
		func(s State) State { return normalize(&cfg, s) })
	return Result{States: n, Violations: traces(fs)}
}

// checkState returns the name of an invariant s breaks, or "".
func checkState(cfg *Config, s State) string {
	d := s.Store
	believers := 0
	for i, o := range s.O {
		// An orchestrator believes it holds while its own clock, less the
		// margin, is before the expiry (kvrouting.Lock.HeldBy).
		if o.Phase < phPre || o.Phase > phFenced || ownNow(cfg, i, s.Clock) >= int(o.Exp)-margin(cfg) {
			continue
		}
		believers++
		// The store must agree with every holder that believes it holds on
		// a current read (one whose reply was lost holds a stale view, on
		// which no CAS of its can succeed).
		// Its own swap, committed while its reply was lost, consumed the
		// lock: the next step recognises it (lockLost).
		if o.Rev == d.Rev && d.SwappedBy != o.Tok && (d.LTok != o.Tok || d.LType == lockNone || s.Clock >= d.LExp) {
			return "mutual exclusion: an orchestrator believes it holds a lock the store does not record"
		}
	}
	if believers > 1 {
		return "mutual exclusion: two orchestrators believe they hold unexpired locks"
	}
	if d.Primary == regT && d.LType != lockNone {
		return "atomic cutover: primary is the target while a migration lock is held"
	}
	if d.SwappedBy != 0 && d.Primary != regT {
		return "atomic cutover: locks released with the source primary after a swap"
	}
	return ""
}

// ownNow is orchestrator i's clock at the store's now: with cfg.Skew,
// orchestrator 0's lags by one tick (any two clocks disagree by at most the
// margin, and either orchestrator can be the holder or the taker).
func ownNow(cfg *Config, i int, now uint8) int {
	if cfg.Skew && i == 0 {
		return int(now) - 1
	}
	return int(now)
}

// margin is the skew margin the protocol allows for: one tick with
// cfg.Skew, none with NoSkewMargin (the broken variant) or without skew.
func margin(cfg *Config) int {
	if cfg.Skew && cfg.Variant != NoSkewMargin {
		return 1
	}
	return 0
}

func tokenOf(cfg *Config, i int, crashes uint8) uint8 {
	return uint8(i)*(cfg.MaxCrashes+1) + crashes + 1
}

// holds is kvrouting's holds(): the token holds an unexpired lock that the
// parent lease still covers, by the holder's clock (own), which stops the
// margin early (paper 000 §4.1).
func holds(d doc, own, m int, tok uint8) bool {
	return d.LType != lockNone && d.LTok == tok && own < int(d.LExp)-m && own < int(d.PreExp)-m
}

// successors calls emit for every transition out of s. inv is non-empty when
// the transition itself breaks an invariant (a stale-token CAS, a write
// accepted under the fence).
func successors(cfg *Config, s State, emit func(label string, next State, inv string)) {
	now := s.Clock
	if now < cfg.MaxClock {
		n := s
		n.Clock++
		emit("tick", n, "")
	}

	for i := range s.O {
		o := s.O[i]
		set := func(n State, o orch) State { n.O[i] = o; return n }
		name := func(a string) string { return fmt.Sprintf("o%d %s", i, a) }
		own, m := ownNow(cfg, i, now), margin(cfg)
		if o.Phase == phDone {
			continue
		}
		// A (possibly stale) orchestrator re-reads the leader.
		if o.Rev != s.Store.Rev {
			no := o
			no.Rev = s.Store.Rev
			emit(name("read"), set(s, no), "")
		}
		// Crash: forget everything; the restart takes a fresh token.
		if o.Phase != phIdle && o.Crashes < cfg.MaxCrashes {
			emit(name("crash"), set(s, orch{Crashes: o.Crashes + 1}), "")
		}
		// cas writes d if the orchestrator's revision is current: the
		// conditional write of kvrouting.Store.update. presented is the token
		// the rule relied on; a CAS that changes a lock held by another token
		// is a stale-token mutation.
		cas := func(label string, base State, d doc, no orch, presented uint8) {
			if o.Rev != s.Store.Rev {
				return // 412: the orchestrator must re-read first
			}
			inv := ""
			if s.Store.LType != lockNone && s.Store.LTok != presented && now < s.Store.LExp {
				inv = "stale-token mutation: a CAS changed a lock held by another token"
			}
			d.Rev = s.Store.Rev + 1
			no.Rev = d.Rev
			n := set(base, no)
			n.Store = d
			emit(name(label), n, inv)
		}
		giveUp := func(why string) {
			if o.Rev == s.Store.Rev {
				no := o
				no.Phase = phDone
				emit(name("gives up: "+why), set(s, no), "")
			}
		}
		d := s.Store
		switch o.Phase {
		case phIdle:
			if o.Rev != d.Rev {
				break
			}
			tok := tokenOf(cfg, i, o.Crashes)
			switch {
			case d.Primary == regT:
				giveUp("at target")
			case d.LType != lockNone && own < int(d.LExp)+m: // a taker allows for the margin
				giveUp("locked")
			default:
				// The pre-lock's not-before is the convergence wait:
				// every tier's TTL (paper 001 §4.1.1), or none at all
				// with fence-driven convergence, where the
				// stores' fences stand in for the caches' expiry.
				wait := cfg.TTL
				if cfg.FenceConvergence {
					wait = 0
				}
				nd := d
				nd.LType, nd.LTok, nd.LNB = lockPre, tok, now+wait
				nd.LExp = now + wait + cfg.PreLease
				nd.PreExp, nd.SecTok = nd.LExp, tok
				cas("pre-lock", s, nd, orch{Phase: phPre, Tok: tok, Exp: nd.LExp, NB: nd.LNB, Crashes: o.Crashes}, d.LTok)
			}
		case phPre:
			if own < int(o.NB)+m {
				break // not converged: wait
			}
			if !holds(d, own, m, o.Tok) {
				giveUp("lock lost")
				break
			}
			nd := d
			nd.LType, nd.LNB, nd.LExp = lockHD, now, min(now+cfg.HardDeleteLease, d.PreExp)
			no := o
			no.Phase, no.Exp = phHD, nd.LExp
			cas("escalate hard-delete", s, nd, no, o.Tok)
		case phHD:
			if !holds(d, own, m, o.Tok) || d.LType != lockHD {
				giveUp("lock lost")
				break
			}
			// Renewal of the hard-delete lock during a long copy (paper 001
			// §4.1.3; orchestrator renewHardDelete): a CAS extending the
			// expiry, never past the parent pre-lock lease.
			if nexp := min(uint8(max(own, 0))+cfg.HardDeleteLease, d.PreExp); cfg.Renewals && nexp > d.LExp {
				nd := d
				nd.LExp = nexp
				no := o
				no.Exp = nexp
				cas("renew hard-delete", s, nd, no, o.Tok)
			}
			nd := d
			nd.LType, nd.LNB, nd.LExp = lockWrite, now, min(now+cfg.WriteLease, d.PreExp)
			no := o
			no.Phase, no.Exp = phWrite, nd.LExp
			cas("escalate write", s, nd, no, o.Tok)
		case phWrite:
			// The first delta export installs the source's exporting
			// authority: the write fence, until the lock's expiry (plus
			// the skew margin). The source refuses to replace another
			// holder's unexpired fence (contract.Join: a stale holder's
			// older revision never overwrites the current one's), and the
			// orchestrator fences only while it still holds the write
			// lock.
			other := s.FenceTok != 0 && s.FenceTok != o.Tok && (now < s.FenceExp || s.FenceTok == d.SwappedBy)
			if other || own >= int(o.Exp)-m {
				no := o
				no.Phase = phDone
				emit(name("gives up: fence refused"), set(s, no), "")
				break
			}
			no := o
			no.Phase = phFenced
			n := set(s, no)
			n.FenceTok, n.FenceExp = o.Tok, o.Exp+uint8(m) // contract.UntilOf: expiry + skew
			if cfg.Variant == FenceExpiresEarly && o.Exp > now+1 {
				n.FenceExp = o.Exp - 1 // BROKEN: the fence lapses before the lock
			}
			emit(name("set write fence"), n, "")
		case phFenced:
			ok := holds(d, own, m, o.Tok) && d.LType == lockWrite
			if cfg.Variant == SwapIgnoresToken {
				ok = d.LType == lockWrite && now < d.LExp // BROKEN: any holder's lock
			}
			if !ok {
				giveUp("lock lost")
				break
			}
			nd := d
			nd.Primary, nd.LType, nd.LTok, nd.LNB, nd.LExp, nd.PreExp = regT, lockNone, 0, 0, 0, 0
			nd.SecTok, nd.SwappedBy = o.Tok, o.Tok
			no := o
			no.Phase = phDone
			cas("swap", s, nd, no, o.Tok)
		}
		// Rollback: release needs the token, not an unexpired lock.
		if o.Phase >= phPre && o.Phase <= phFenced && o.Rev == d.Rev {
			switch {
			case d.LType == lockNone || d.LTok != o.Tok:
				giveUp("nothing to release")
			default:
				nd := d
				nd.LType, nd.LTok, nd.LNB, nd.LExp, nd.PreExp = lockNone, 0, 0, 0, 0
				if nd.SecTok == o.Tok {
					nd.SecTok = 0
				}
				no := o
				no.Phase = phDone
				base := s
				if s.FenceTok == o.Tok { // the fence is cleared on rollback
					base.FenceTok, base.FenceExp = 0, 0
				}
				cas("release", base, nd, no, o.Tok)
			}
		}
	}

	// Cache tiers refresh from the store whenever they like.
	for k := range s.Tiers {
		t := tier{Valid: true, Fetched: now, Copy: s.Store}
		if normalize(cfg, State{Clock: now, Tiers: [2]tier{t}}).Tiers[0] != normalize(cfg, State{Clock: now, Tiers: [2]tier{s.Tiers[k]}}).Tiers[0] {
			n := s
			n.Tiers[k] = t
			emit(fmt.Sprintf("tier%d refresh", k), n, "")
		}
	}

	// The client resolves through a tier, decides, and later writes.
	if !s.C.Pending && s.C.Writes < cfg.MaxWrites {
		for k := range s.Tiers {
			n := s
			t := s.Tiers[k]
			view := s.Store
			src := "leader"
			if t.Valid && now-t.Fetched < cfg.TTL && (cfg.Variant == CacheServesLocked || !t.Copy.inForce(now)) {
				view, src = t.Copy, "cache"
			} else {
				n.Tiers[k] = tier{Valid: true, Fetched: now, Copy: s.Store} // read-through fills the tier
			}
			// kvrouting.Decide for a write at the primary the copy names.
			allowed := !(view.LType == lockWrite && view.inForce(now))
			n.C = client{Writes: s.C.Writes, Pending: true, Region: view.Primary, Allowed: allowed}
			emit(fmt.Sprintf("client resolves via tier%d (%s)", k, src), n, "")
		}
	}
	if s.C.Pending {
		n := s
		n.C.Pending = false
		n.C.Writes++
		label := "client write refused"
		inv := ""
		if s.C.Allowed {
			label = "client write at target"
			if s.C.Region == regS {
				d := s.Store
				fence := s.FenceTok != 0 && (now < s.FenceExp || s.FenceTok == d.SwappedBy) // stays after the swap
				if cfg.Variant == NoFence || !fence {
					label = "client write accepted at source"
					// A holder that has fenced may have exported its last
					// delta and can still swap: a write accepted at the
					// source now is in no export and is lost at the swap.
					// (This case used to require the fence to hold inside a
					// branch where it does not: unreachable.)
					exported := false
					for _, o := range s.O {
						if o.Phase == phFenced && d.LType == lockWrite && d.LTok == o.Tok && now < o.Exp {
							exported = true
						}
					}
					switch {
					case exported:
						inv = "write fence: a client write was accepted at the source after the holder's final export (lost at its swap)"
					case d.SwappedBy != 0:
						inv = "write fence: a client write was accepted at the source after the cutover"
					}
				} else {
					label = "client write refused by the fence"
				}
			}
		}
		emit(label, n, inv)
	}
}

// normalize merges states that no future step can tell apart: a tier copy
// past its TTL is as good as none, a copy keeps only what Decide and the
// read-through rule look at, and a finished orchestrator forgets its token.
func normalize(cfg *Config, s State) State {
	for k, t := range s.Tiers {
		if !t.Valid || s.Clock-t.Fetched >= cfg.TTL {
			s.Tiers[k] = tier{}
			continue
		}
		c := t.Copy
		s.Tiers[k].Copy = doc{Primary: c.Primary, LType: c.LType, LNB: c.LNB, LExp: c.LExp}
	}
	for i, o := range s.O {
		if o.Phase == phDone {
			s.O[i] = orch{Phase: phDone, Crashes: o.Crashes}
		}
	}
	return s
}
