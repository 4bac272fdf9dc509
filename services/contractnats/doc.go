// Package contractnats carries the migration contract (paper 001 §5.1,
// contract.Participant) over NATS, so that the orchestrator reaches any
// service in any region (DESIGN.md "Services and the contract").
//
// # Request/reply
//
// Serve registers a nats.go micro service named ServiceName for one service
// in one region, with metadata "region" and "service", and one endpoint per
// contract operation under
//
//	cutover.contract.<region>.<service>.<op>
//
// where <op> is authority, export, import, digests, slice, cleanup, repair
// or checkpoint (Ops; docs/participant.md gives every request and reply).
// Every request that acts on a resource carries the authority it runs under
// (contract.Authority, the routing revision as the only fencing token); the
// participant decides it with contract.Admit. Requests carry the caller's
// relative timeout (Cutover-Timeout-Ms) and absolute deadline
// (Cutover-Deadline-Ms); a request that reaches its handler past the
// timeout since it arrived, or more than DeadlineSkewMargin past the
// deadline, is answered CodeUnavailable and not executed. Payloads are
// msgpack. A failure travels as a micro error reply (headers
// Nats-Service-Error-Code = the contract.Code, Nats-Service-Error = the
// message) whose body is the msgpack *contract.Error, so a remote error
// comes back from the Client as an equal *contract.Error (errors.As works,
// Code, RetryAfter and Lock survive). Discover lists the registered
// contract services through micro's $SRV.INFO discovery.
//
// # Pages through JetStream
//
// Unless asked for inline (below), export pages do not travel in the
// reply. The export endpoint publishes the page to the stream PagesStream
// ("PAGES", subjects "cutover.pages.>") on
//
//	cutover.pages.<migrationID>.<service>
//
// with Nats-Msg-Id "<migrationID>/<service>/<mode>[@<attempt>]/<synctoken>/<cursor>", and
// replies with a small PageRef naming the stream sequence. A publish whose
// outcome is unknown (timeout) is retried with the same id; the stream's
// duplicate window makes the retry safe (DESIGN.md "Durability and
// hazards"). The import endpoint, at the target, is told the sequence, gets
// that message from the stream, applies it with Participant.Import (paper 001
// (A3): idempotent) and records a checkpoint, the highest page sequence
// applied for (migrationID, service), in durable state.
//
// An empty page (no records, no tombstones) is not published: its PageRef
// has Seq 0 and Count 0, and there is nothing to import. Most resources
// have services with nothing to copy, and each published page is a synced
// append.
//
// An export asked for inline (contract.ExportRequest.Inline; the
// orchestrator asks it for every page) returns the page in its PageRef
// (Page, Seq 0) when it fits InlinePageMax, and publishes nothing; the
// import request then carries the page ("page"), and the last one asks for
// the target's digests in its reply ("digests"): a page is one round trip
// to the source and one to the target, and no synced append. Only a larger
// page goes through the stream.
//
// # The orchestrator's directory
//
// Directory is the contract.Directory the orchestrator runs on: its
// endpoints are Clients that export to and import from PagesStream. Which
// services own a resource kind is given to NewDirectory (chat.ServicesFor),
// not known here. Validation digests are read through the contract, or
// through the user-facing API's region-pinned route when
// DirectoryOptions.APIURL is set (paper 001 §5.3).
//
// # Concurrency
//
// Server, Client and Directory are safe for concurrent use by any
// goroutine. A Server handles up to ServeOptions.MaxConcurrent requests at
// once, of any endpoints (each operation is idempotent and takes the
// store's per-resource lock); run more Servers of the same (region,
// service) to share the load (micro's queue group).
package contractnats
