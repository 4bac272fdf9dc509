package cnats

// Internals the external tests (package cnats_test) use. Those tests are
// external because they use natstest, which imports this package.
var (
	FreePorts   = freePorts
	AccountName = accountName
)
