// Package approval authenticates the people behind a two-person operation
// (`cutover lock force-release`, `cutover fence clear`). Each operator
// holds an ed25519 key (Key); the deployment keeps a registry of the
// operators' public keys (operators.json, Registry); an approval is one
// operator's signature over a canonical statement of exactly what is
// approved — the operation, the resource, the region, the reason, when it
// was issued and when it expires (at most MaxValidity later). The
// orchestrator verifies a command's approvals before it acts
// (Registry.Verify): approvals from two distinct registered operators,
// each signed by that operator's key, valid now, for this operation on
// this resource at this region for this reason.
//
// Names are compared in one canonical form (Canonical: Unicode NFKC,
// format characters removed, case folded), so "alice", "Alice",
// "alice\u200b" and "alice\u00ad" are one operator; a registered name is
// written in one script (ValidName), so "аlice" with a Cyrillic а is never
// a registered name, whoever signs it.
//
// The package is a leaf: the standard library and golang.org/x/text.
package approval
