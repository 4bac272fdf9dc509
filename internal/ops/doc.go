// Package ops runs the operator commands of cutover against a running
// deployment, over NATS only: start, follow, list and cancel migrations,
// replay their history, read routing documents, force-release a stuck lock
// and run the synthetic lock probe (DESIGN.md "Users and what they run").
//
// Each command is one function taking a request (the parsed command line)
// and the writers it prints to. It checks the request before it connects, a
// bad one giving an error that wraps ErrUsage, and renders states, events
// and routing documents as text or JSON with every lock token redacted.
package ops
