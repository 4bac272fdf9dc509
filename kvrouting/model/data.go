package model

// The data layer of the model (Config.Data): one record at the source and
// the target, the copy's exports and imports, the target's import grant,
// physical deletes at the primary, the rollback's target cleanup, and a
// swap whose reply is lost. The rules mirror services/store/grant.go
// (ImportGranted: an import lands only under an unrevoked, unexpired grant
// of its own token, which since issue 16 the import request itself may
// grant: contract.ApplyImport), services/cleanup.go (RoutingCleanupGuard: a cleanup
// reads routing under the store's lock and spares a primary or a target in
// flight) and orchestrator/phase_cutover.go (the grant is revoked before
// the validation; a replay recognises its own swap by the document's
// LastSwap).

// revoke revokes tok's grant at the target and retires tok: a grant or an
// import of tok later is refused (store.RevokeImport).
func revoke(x data, tok uint8) data {
	if x.Grant == tok {
		x.Grant, x.GrantExp = 0, 0
	}
	x.Retired |= 1 << tok
	return x
}

// copySteps are orchestrator i's copy steps while it holds the hard-delete
// or the write lock and has not validated: grant the import at the target
// (its lock's expiry), export the source's record into an import request
// (which lands later, or never, as dataSteps decides), and, once the write
// fence is up, revoke the grant and validate (paper 001 §4.1.4).
func copySteps(cfg *Config, s State, i, own, m int, emit func(string, State, string)) {
	o := s.O[i]
	if o.Phase < phHD || o.Phase > phFenced || o.Validated || o.Rev != s.Store.Rev || !holds(s.Store, own, m, o.Tok) {
		return
	}
	name := func(a string) string { return "o" + string(rune('0'+i)) + " " + a }
	x := s.D
	// The grant (store.GrantImport): refused for a retired token.
	if (x.Grant != o.Tok || x.GrantExp != o.Exp) && !retired(x, o.Tok) {
		n := s
		n.D.Grant, n.D.GrantExp = o.Tok, o.Exp
		emit(name("grant import"), n, "")
	}
	// An export of the source's record: one request in flight at a time.
	if !x.Imp.Valid {
		n := s
		n.D.Imp = imp{Valid: true, Tok: o.Tok, Val: x.S, Exp: o.Exp}
		emit(name("export"), n, "")
	}
	// Validation, behind the write fence: the grant goes first, so that no
	// import can land between the validation and the swap.
	if o.Phase == phFenced {
		n := s
		n.D = revoke(x, o.Tok)
		if x.T == x.S {
			n.O[i].Validated = true
			emit(name("revoke grant, validate: equal"), n, "")
		} else {
			emit(name("revoke grant, validate: differs"), n, "")
		}
	}
}

// lockLost is a fenced orchestrator, its write lock gone from the document
// it has just read: either its swap committed and it never heard (its
// reply or its Swapped event lost) and it carries on as swapped, or the lock
// lapsed or was taken and it rolls back: its write fence at the source is
// cleared, its grant revoked, its target cleanup due. The correct engine
// tells them apart by the document's record of the last swap (SwappedBy:
// kvrouting.Document.LastSwap); LostSwapEvent does not look (issue 14 #2).
func lockLost(cfg *Config, s State, i int, emit func(string, State, string)) {
	o := s.O[i]
	name := func(a string) string { return "o" + string(rune('0'+i)) + " " + a }
	n := s
	no := o
	no.Phase = phDone
	if s.Store.SwappedBy == o.Tok && cfg.Variant != LostSwapEvent {
		n.O[i] = no
		emit(name("recognises its own swap"), n, "")
		return
	}
	if n.FenceTok == o.Tok {
		n.FenceTok, n.FenceExp = 0, 0
	}
	n.D = revoke(n.D, o.Tok)
	no.Cleanup = true
	n.O[i] = no
	inv := ""
	if s.Store.SwappedBy == o.Tok {
		// Its swap committed: rolling back clears the old location's
		// post-swap fence (a stale router's write then lands there after
		// the cutover) and reports a moved resource as not moved.
		inv = "lost swap: a migration whose swap committed rolled back (the source's post-swap fence cleared)"
	}
	emit(name("lock lost: rolls back"), n, inv)
}

// cleanup is a rolled-back orchestrator's target cleanup, a contract call
// that may land at any later time. The participant reads routing under its
// store lock and deletes nothing while the target is the primary or the
// target of a migration in flight (contract.Participant.Cleanup);
// UnguardedCleanup deletes regardless.
func cleanup(cfg *Config, s State, i int, emit func(string, State, string)) {
	name := func(a string) string { return "o" + string(rune('0'+i)) + " " + a }
	d := s.Store
	live := d.Primary == regT || d.LType != lockNone
	n := s
	n.O[i].Cleanup = false
	if live && cfg.Variant != UnguardedCleanup {
		emit(name("target cleanup spares live data"), n, "")
		return
	}
	n.D.T = 0
	inv := ""
	if live {
		inv = "cleanup: a rollback's cleanup deleted the data of the primary or of a target in flight"
	}
	emit(name("target cleanup"), n, inv)
}

// dataSteps are the environment's data steps: the import in flight lands
// (gated by the grant) and a user deletes the record at the primary.
func dataSteps(cfg *Config, s State, emit func(string, State, string)) {
	x, d, now := s.D, s.Store, s.Clock
	if x.Imp.Valid {
		n := s
		n.D.Imp = imp{}
		granted := x.Grant == x.Imp.Tok && now < x.GrantExp && !retired(x, x.Imp.Tok)
		// The request grants its own token as it lands (issue 16: grant
		// and import in one request); a retired token stays refused.
		if !granted && now < x.Imp.Exp && (!retired(x, x.Imp.Tok) || cfg.Variant == GrantIgnoresRetired) {
			granted = true
			n.D.Grant, n.D.GrantExp = x.Imp.Tok, x.Imp.Exp
		}
		if granted || cfg.Variant == UngatedImport {
			n.D.T = x.Imp.Val
			inv := ""
			switch {
			case d.Primary == regT && x.Deleted && x.Imp.Val == 1 && x.T == 0:
				inv = "no resurrection: a late import brought back, at the primary, a record whose delete was acknowledged"
			case d.Primary == regT:
				inv = "import: an import landed at the primary, after its swap"
			case retired(x, x.Imp.Tok):
				inv = "import: an import landed after its grant was revoked (after its validation or rollback)"
			}
			emit("import lands", n, inv)
		} else {
			emit("import refused (no grant)", n, "")
		}
	}
	// A user deletes the record at the primary by the routing it reads now
	// (Table 4): refused under a write lock or the source's write fence,
	// else removed (a tombstone under the hard-delete lock, which copies
	// carry like a removal; a physical delete otherwise).
	if x.Deletes < cfg.MaxDeletes {
		at := &x.S
		if d.Primary == regT {
			at = &x.T
		}
		fenced := d.Primary == regS && s.FenceTok != 0 && (now < s.FenceExp || s.FenceTok == d.SwappedBy)
		if *at == 1 && !(d.LType == lockWrite && d.inForce(now)) && !fenced {
			*at = 0
			x.Deleted = true
			x.Deletes++
			n := s
			n.D = x
			emit("client deletes the record at the primary", n, "")
		}
	}
}
