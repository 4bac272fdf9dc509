// Package services implements the migration contract (package contract,
// paper 001 §5.1) over a store.Store, and is the parent of the reference
// chat services, the user-facing HTTP API and the client SDK.
//
// StoreParticipant is the contract.Participant the reference services embed;
// ToError translates the store's and the routing library's errors into the
// contract's *contract.Error; Routed carries a request's routing authority
// from the API to the store's admission.
package services
