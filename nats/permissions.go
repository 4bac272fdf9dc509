package cnats

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Subject permissions of a deployment: every user is given an allowlist
// (what its identity's job needs and nothing else) plus explicit denials
// of the subjects an attacker would aim at, so that a future widening of
// an allowlist cannot silently open them (deny wins over allow in
// nats-server).
//
// Why subject permissions suffice, without separate NATS accounts: every
// decision this model needs is visible in a subject. The JetStream API
// names the stream (and the consumer) in the request subject, so stream
// and consumer administration, purges, pulls and acks are granted per
// stream; RePublish, Mirror and Sources live in a stream's configuration,
// which only the admin identity may create or update; the migration
// contract's subjects carry the region and the service
// (cutover.contract.<region>.<service>.<op>), so a service user is bound
// to its regions; replies go to per-user inbox prefixes. What subjects
// cannot express: a reader of a stream may create ephemeral consumers on
// it, and so could update another reader's ephemeral consumer on the same
// stream if it learnt its random name (names cannot be listed: CONSUMER.
// NAMES and LIST are not granted); an account split would remove that.

// Identity is the kind of NATS user a process connects as; with the user's
// name and regions it decides the user's permissions (Grants).
type Identity string

const (
	// IdentityAdmin provisions the deployment (`cutover provision`) and is
	// the operators' break-glass identity: the whole JetStream API (the
	// only identity that may create, update, purge or delete streams and
	// consumers, and so set RePublish, Mirror or Sources), commands, the
	// contract's digests. It may not consume the workers' queues, append
	// to the migration log (the audit events are the orchestrator's) or
	// repair an authority record (the orchestrator does, once two
	// operators' signed approvals authorise it).
	IdentityAdmin Identity = "admin"
	// IdentityRouting is the gateway's: it writes the ROUTING bucket
	// (creating a conversation creates its routing document) and, for the
	// regions it is given, serves their contract (gateway = services + API
	// in one process).
	IdentityRouting Identity = "routing"
	// IdentityOrchestrator is the workers': the only identity that
	// publishes migration events (the audit events included), work and
	// index entries, consumes the command and work queues, and sends
	// contract requests (repair included). Its locker writes routing
	// documents during a migration.
	IdentityOrchestrator Identity = "orchestrator"
	// IdentityService serves the migration contract of its regions only
	// (cutover.contract.<region>.>) and publishes export pages; it reads
	// routing but writes neither ROUTING nor the migration streams.
	IdentityService Identity = "service"
	// IdentityReader is unprivileged: it reads ROUTING and the migration
	// event log and index (the projector, probes, dashboards) and writes
	// nothing. Routing documents and events carry lock tokens whole (the
	// enforcers need them); a reader sees them, and a token gives it
	// nothing to act with (docs/wire-format.md "Tokens").
	IdentityReader Identity = "reader"
)

// Identities lists every identity, most privileged first.
var Identities = []Identity{IdentityAdmin, IdentityRouting, IdentityOrchestrator, IdentityService, IdentityReader}

// Subjects and streams the permissions name. Their owners' constants are
// kept in step by TestPermissionSubjects.
const (
	eventSubjects   = "cutover.evt.>"
	commandSubjects = "cutover.cmd.>"
	workSubjects    = "cutover.work.>"
	indexSubjects   = "cutover.idx.>"
	eventStream     = "MIGRATION_EVENTS" // events.EventStream
	commandStream   = "MIGRATION_CMDS"   // events.CommandStream
	workStream      = "MIGRATION_WORK"   // events.WorkStream
	indexStream     = "MIGRATION_INDEX"  // events.IndexStream
	pagesStream     = "PAGES"            // contractnats.PagesStream
	pageSubjects    = "cutover.pages.>"  // contractnats.PagesSubjectPrefix
	contractPrefix  = "cutover.contract" // contractnats.SubjectPrefix
	// The workers' durable consumers (orchestrator.CommandConsumer,
	// orchestrator.WorkConsumer).
	commandConsumer = "orchestrator-commands"
	workConsumer    = "orchestrator-work"
	// srvSubjects are micro's discovery subjects ($SRV.PING|INFO|STATS).
	srvSubjects = "$SRV.>"
)

// ContractAdminOps are the migration contract operations the admin identity
// may request: digests, which change nothing (`cutover migrate start
// --dry-run` reads them). Every other operation is the orchestrator's
// alone — the repair of a stranded authority too, which the orchestrator
// performs for `cutover fence clear` once it has verified two operators'
// approvals — so the permissions do not depend on the rest of the
// operation set.
var ContractAdminOps = []string{"digests"}

// contractMutations are the contract operations that change a service's
// state, denied to the reader by name on top of its allowlist (which has
// no contract subject at all). Kept in step by TestContractOpsInStep.
var contractMutations = []string{"authority", "import", "cleanup", "repair", "checkpoint"}

// InboxPrefix is user's inbox prefix, "_INBOX.<user>": the only inboxes
// user may subscribe to, so that no other user reads its replies
// (ClientSecurity.Options sets it on the connection).
func InboxPrefix(user string) string { return "_INBOX." + user }

// ResponseExpiry bounds how long a user may answer a request it received
// (nats-server's allow_responses): longer than any contract request.
// ResponseMaxMsgs bounds the answers to one request from one connection:
// the gateway's contract servers (one per region and service) share a
// connection, and each answers a discovery request ($SRV.INFO) once.
const (
	ResponseExpiry  = 5 * time.Minute
	ResponseMaxMsgs = 256
)

// Grant is one capability of a user: a name (README's security table) and
// the subjects it allows or denies.
type Grant struct {
	Name string
	// Publish and Subscribe are allowed; DenyPublish is denied whatever
	// any grant allows.
	Publish, Subscribe, DenyPublish []string
}

func jsAPI(parts ...string) string { return "$JS.API." + strings.Join(parts, ".") }

// readStream is what reading stream s needs: gets (leader and direct) and
// ephemeral consumers (ordered consumers, KV watches) pulled by the reader
// and deleted by it when it stops (else each would linger on the server
// until its inactivity threshold).
func readStream(s string) []string {
	return []string{
		jsAPI("STREAM.MSG.GET", s), jsAPI("DIRECT.GET", s), jsAPI("DIRECT.GET", s, ">"),
		jsAPI("CONSUMER.CREATE", s), jsAPI("CONSUMER.CREATE", s, ">"),
		jsAPI("CONSUMER.INFO", s, "*"), jsAPI("CONSUMER.MSG.NEXT", s, "*"), jsAPI("CONSUMER.DELETE", s, "*"),
	}
}

// worker is what consuming durable consumer c of work-queue stream s
// needs: binding (create-or-update of that one name), pulls and acks.
func worker(s, c string) []string {
	return []string{jsAPI("CONSUMER.CREATE", s, c), jsAPI("CONSUMER.CREATE", s, c, ">"), jsAPI("CONSUMER.INFO", s, c),
		jsAPI("CONSUMER.MSG.NEXT", s, c), "$JS.ACK." + s + "." + c + ".>"}
}

// jsAdmin are the JetStream API requests that change streams or the
// workers' consumers other than by publishing to a stream or binding a
// worker's consumer. (A reader deletes the ephemeral consumers it made on
// the streams it reads: readStream.)
var jsAdmin = []string{
	jsAPI("STREAM.CREATE.>"), jsAPI("STREAM.UPDATE.>"), jsAPI("STREAM.DELETE.>"), jsAPI("STREAM.PURGE.>"),
	jsAPI("STREAM.MSG.DELETE.>"), jsAPI("STREAM.SNAPSHOT.>"), jsAPI("STREAM.RESTORE.>"), jsAPI("STREAM.PEER.>"),
	jsAPI("STREAM.LEADER.>"), jsAPI("CONSUMER.DELETE", commandStream, ">"), jsAPI("CONSUMER.DELETE", workStream, ">"),
	jsAPI("CONSUMER.DURABLE.>"), jsAPI("CONSUMER.PAUSE.>"), jsAPI("CONSUMER.UNPIN.>"), jsAPI("CONSUMER.LEADER.>"),
	jsAPI("ACCOUNT.>"), jsAPI("META.>"), jsAPI("SERVER.>"),
}

// workQueues are the requests that take from the workers' queues.
var workQueues = []string{
	jsAPI("CONSUMER.CREATE", commandStream), jsAPI("CONSUMER.CREATE", commandStream, ">"), jsAPI("CONSUMER.MSG.NEXT", commandStream, ">"),
	"$JS.ACK." + commandStream + ".>",
	jsAPI("CONSUMER.CREATE", workStream), jsAPI("CONSUMER.CREATE", workStream, ">"), jsAPI("CONSUMER.MSG.NEXT", workStream, ">"),
	"$JS.ACK." + workStream + ".>",
}

// Grants returns the capabilities of user (a NATS user name, one subject
// token) of identity id; regions are the regions whose contract it serves
// (service: at least one; routing: those of its gateway; others: none).
// It returns ErrInvalidOptions for an unknown identity or regions that do
// not fit it. The values are the deployment's permission table (README
// "Security" is generated from them).
func Grants(id Identity, user string, regions []string) ([]Grant, error) {
	switch id {
	case IdentityService:
		if len(regions) == 0 {
			return nil, fmt.Errorf("%w: a %s user needs the regions it serves", ErrInvalidOptions, id)
		}
	case IdentityRouting:
	case IdentityAdmin, IdentityOrchestrator, IdentityReader:
		if len(regions) > 0 {
			return nil, fmt.Errorf("%w: a %s user serves no region (got %v)", ErrInvalidOptions, id, regions)
		}
	default:
		return nil, fmt.Errorf("%w: identity %q (want one of %v)", ErrInvalidOptions, id, Identities)
	}
	routing := append(append(readStream(RoutingStream), readStream(RoutingHistoryStream)...), jsAPI("DIRECT.GET.*", RoutingSubjectPrefix+">"))
	base := Grant{Name: "own inbox; stream info",
		Publish:   []string{jsAPI("INFO"), jsAPI("STREAM.INFO.*"), jsAPI("STREAM.NAMES"), jsAPI("STREAM.LIST")},
		Subscribe: []string{InboxPrefix(user) + ".>"}}
	readRouting := Grant{Name: "read ROUTING, its history and mirrors", Publish: routing}
	writeRouting := Grant{Name: "write ROUTING", Publish: []string{RoutingSubjectPrefix + ">"}}
	var serve Grant
	if len(regions) > 0 {
		serve = Grant{Name: "serve the contract of its regions", Subscribe: []string{srvSubjects}}
		for _, r := range regions {
			serve.Subscribe = append(serve.Subscribe, contractPrefix+"."+r+".>")
		}
	}
	pages := Grant{Name: "publish and read export pages", Publish: []string{pageSubjects, jsAPI("STREAM.MSG.GET", pagesStream), jsAPI("DIRECT.GET", pagesStream)}}
	discover := Grant{Name: "discover contract servers", Publish: []string{srvSubjects}}
	readLog := Grant{Name: "read the migration log and index", Publish: append(readStream(eventStream), readStream(indexStream)...)}
	// Denials: what only the admin, only the workers, only the writers of
	// routing may do.
	notAdmin := Grant{Name: "no stream or consumer administration", DenyPublish: jsAdmin}
	notWorker := Grant{Name: "no taking from the workers' queues", DenyPublish: workQueues}
	notLog := Grant{Name: "no migration log writes", DenyPublish: []string{eventSubjects, workSubjects, indexSubjects}}
	notCommands := Grant{Name: "no commands", DenyPublish: []string{commandSubjects}}
	notRouting := Grant{Name: "no ROUTING writes", DenyPublish: []string{RoutingSubjectPrefix + ">"}}

	var gs []Grant
	switch id {
	case IdentityAdmin:
		admin := Grant{Name: "administer JetStream; commands; contract digests",
			Publish: []string{jsAPI(">"), commandSubjects, RoutingSubjectPrefix + ">"}}
		for _, op := range ContractAdminOps {
			admin.Publish = append(admin.Publish, contractPrefix+".*.*."+op)
		}
		gs = []Grant{base, admin, discover, notWorker, notLog}
	case IdentityRouting:
		gs = []Grant{base, readRouting, writeRouting}
		if len(regions) > 0 {
			gs = append(gs, serve)
		}
		gs = append(gs, pages, notAdmin, notWorker, notLog, notCommands)
	case IdentityOrchestrator:
		log := Grant{Name: "append the migration log; commands; consume the work queues",
			Publish: append(append([]string{eventSubjects, workSubjects, indexSubjects, commandSubjects},
				worker(commandStream, commandConsumer)...), worker(workStream, workConsumer)...)}
		contract := Grant{Name: "send contract requests", Publish: []string{contractPrefix + ".>", srvSubjects}}
		gs = []Grant{base, readRouting, writeRouting, readLog, log, contract, notAdmin}
	case IdentityService:
		gs = []Grant{base, readRouting, serve, pages, notAdmin, notWorker, notLog, notCommands, notRouting}
	case IdentityReader:
		noContract := Grant{Name: "no contract mutations, no pages", DenyPublish: []string{pageSubjects}}
		for _, op := range contractMutations {
			noContract.DenyPublish = append(noContract.DenyPublish, contractPrefix+".*.*."+op)
		}
		gs = []Grant{base, readRouting, readLog, discover, notAdmin, notWorker, notLog, notCommands, notRouting, noContract}
	}
	return gs, nil
}

// permissions folds grants into nats-server permissions; every user may
// answer a request it received (allow_responses: a contract reply, a flow
// control reply, discovery answers) within ResponseExpiry.
func permissions(gs []Grant) *server.Permissions {
	var pub, sub, deny []string
	for _, g := range gs {
		pub, sub, deny = append(pub, g.Publish...), append(sub, g.Subscribe...), append(deny, g.DenyPublish...)
	}
	p := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: compact(pub), Deny: compact(deny)},
		Subscribe: &server.SubjectPermission{Allow: compact(sub)},
		Response:  &server.ResponsePermission{MaxMsgs: ResponseMaxMsgs, Expires: ResponseExpiry},
	}
	return p
}

func compact(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Permissions returns the permissions of a user named after id that
// serves no region (a service user needs regions: User.Permissions).
// Errors: ErrInvalidOptions.
func Permissions(id Identity) (*server.Permissions, error) {
	gs, err := Grants(id, string(id), nil)
	if err != nil {
		return nil, err
	}
	return permissions(gs), nil
}

// Permissions returns u's permissions. Errors: ErrInvalidOptions (bad
// name, identity or regions).
func (u User) Permissions() (*server.Permissions, error) {
	if err := validUserName(u.Name); err != nil {
		return nil, err
	}
	for _, r := range u.Regions {
		if err := ValidateRegion(r); err != nil {
			return nil, fmt.Errorf("%w: user %q: %w", ErrInvalidOptions, u.Name, err)
		}
	}
	gs, err := Grants(u.Identity, u.Name, u.Regions)
	if err != nil {
		return nil, fmt.Errorf("user %q: %w", u.Name, err)
	}
	return permissions(gs), nil
}

// validUserName: a user name is one subject token of [A-Za-z0-9_-] (it
// names the user's inbox prefix), at most 64 bytes.
func validUserName(name string) error {
	if err := ValidateRegion(name); err != nil {
		return fmt.Errorf("%w: user name %q: 1 to 64 of A-Z a-z 0-9 - _", ErrInvalidOptions, name)
	}
	return nil
}

// PermissionTable renders the permission model as README's markdown
// tables: the identities with their grants, and every grant's subjects
// (for a user <user> serving region <region>).
func PermissionTable() string {
	runs := map[Identity]string{
		IdentityAdmin:        "`cutover provision`; operators",
		IdentityRouting:      "`cutover gateway` (API + its regions' services)",
		IdentityOrchestrator: "`cutover orchestrator`",
		IdentityService:      "`cutover service --region R`",
		IdentityReader:       "`cutover projector`; probes, dashboards",
	}
	var b strings.Builder
	b.WriteString("| identity | runs | regions | grants |\n|---|---|---|---|\n")
	seen := map[string]Grant{}
	var order []string
	for _, id := range Identities {
		var regions []string
		regionCol := "none"
		switch id {
		case IdentityService:
			regions, regionCol = []string{"<region>"}, "required"
		case IdentityRouting:
			regions, regionCol = []string{"<region>"}, "those it serves"
		}
		gs, _ := Grants(id, "<user>", regions)
		var names []string
		for _, g := range gs {
			names = append(names, g.Name)
			if _, ok := seen[g.Name]; !ok {
				seen[g.Name] = g
				order = append(order, g.Name)
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", id, runs[id], regionCol, strings.Join(names, "; "))
	}
	b.WriteString("\n| grant | may publish | may subscribe | may never publish |\n|---|---|---|---|\n")
	code := func(s []string) string {
		if len(s) == 0 {
			return "—"
		}
		out := make([]string, len(s))
		for i, x := range s {
			out[i] = "`" + x + "`"
		}
		return strings.Join(out, " ")
	}
	for _, n := range order {
		g := seen[n]
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", n, code(g.Publish), code(g.Subscribe), code(g.DenyPublish))
	}
	fmt.Fprintf(&b, "\nEvery user may also answer a request it received (`allow_responses`: at most %d messages per request and connection, within %v); its inbox prefix is `_INBOX.<user>` (set by the client).\n",
		ResponseMaxMsgs, ResponseExpiry)
	return b.String()
}
