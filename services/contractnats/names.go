package contractnats

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cutover/cutover/nats/natsclient"
	"github.com/cutover/cutover/services/contract"
)

// Names on the wire.
const (
	// ServiceName is the micro service name every contract server registers;
	// Discover asks $SRV.INFO.<ServiceName>.
	ServiceName = "cutover-contract"
	// Version is the micro service version, the migration contract's
	// version: bumped when the wire changes (2.0.0: one authority record
	// per resource, docs/participant.md).
	Version = "2.0.0"
	// SubjectPrefix prefixes every contract endpoint subject:
	// "cutover.contract.<region>.<service>.<op>".
	SubjectPrefix = "cutover.contract"
	// PagesStream is the JetStream stream that carries export pages.
	PagesStream = "PAGES"
	// PagesSubjectPrefix prefixes every page subject:
	// "cutover.pages.<migrationID>.<service>".
	PagesSubjectPrefix = "cutover.pages"
	// MetadataRegion and MetadataService are the micro metadata keys that
	// name the region and the service of a contract server.
	MetadataRegion  = "region"
	MetadataService = "service"
)

// Endpoint operation names (the last subject token;
// docs/participant.md "Operations").
const (
	// OpAuthority installs an authority (contract.Participant.Authorize).
	OpAuthority = "authority"
	OpExport    = "export"
	OpImport    = "import"
	OpDigests   = "digests"
	OpSlice     = "slice"
	OpCleanup   = "cleanup"
	// OpRepair is the operator's replacement of an authority record
	// (contract.Repairer, `cutover fence clear`).
	OpRepair = "repair"
	// OpCheckpoint reads the import checkpoint of a migration.
	OpCheckpoint = "checkpoint"
)

// Ops lists every operation a Server serves.
var Ops = []string{OpAuthority, OpExport, OpImport, OpDigests, OpSlice, OpCleanup, OpRepair, OpCheckpoint}

// Name limits: short enough that subjects, Msg-Ids and checkpoint names
// (at most 256 bytes as store cursors) always fit.
const (
	maxServiceLen   = 64
	maxMigrationLen = 128
)

// ValidateService reports whether name can name a service: 1 to 64 of
// A-Z a-z 0-9 '-' '_', so that it is one NATS subject token and cannot
// collide with the '/' separators of a Nats-Msg-Id (regions follow
// natsclient.ValidateRegion, the same rule). It returns an error wrapping
// ErrInvalidName.
func ValidateService(name string) error { return validateToken("service", name, maxServiceLen) }

// ValidateMigrationID reports whether id can name a migration: 1 to 128 of
// A-Z a-z 0-9 '-' '_' (a ULID or UUID fits). It returns an error wrapping
// ErrInvalidName.
func ValidateMigrationID(id string) error { return validateToken("migration id", id, maxMigrationLen) }

func validateToken(what, name string, maxLen int) error {
	if name == "" || len(name) > maxLen {
		return fmt.Errorf("%w: %s %q: length must be 1..%d", ErrInvalidName, what, name, maxLen)
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("%w: %s %q: character %q", ErrInvalidName, what, name, r)
		}
	}
	return nil
}

// validateRegion wraps natsclient.ValidateRegion into ErrInvalidName.
func validateRegion(region string) error {
	if err := natsclient.ValidateRegion(region); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidName, err)
	}
	return nil
}

// EndpointSubject returns the subject of operation op of service in region:
// "cutover.contract.<region>.<service>.<op>". It does not validate.
func EndpointSubject(region, service, op string) string {
	return groupSubject(region, service) + "." + op
}

func groupSubject(region, service string) string {
	return SubjectPrefix + "." + region + "." + service
}

// PageSubject returns the stream subject of service's pages in a migration:
// "cutover.pages.<migrationID>.<service>". It does not validate.
func PageSubject(migrationID, service string) string {
	return PagesSubjectPrefix + "." + migrationID + "." + service
}

// MsgID returns the Nats-Msg-Id of a page:
// "<migrationID>/<service>/<mode>/<synctoken>/<cursor>", or with an attempt
// "<migrationID>/<service>/<mode>@<attempt>/<synctoken>/<cursor>". Two
// exports of the same page position in one attempt get the same id, so a
// retried publish is deduplicated by the stream (DESIGN.md "Durability and
// hazards"); a rescheduled attempt gets its own (a physical
// delete does not advance the change sequence, so the same position can
// hold different records in the next attempt).
func MsgID(migrationID, service string, mode contract.ExportMode, attempt uint32, syncToken, cursor uint64) string {
	var b strings.Builder
	b.Grow(len(migrationID) + len(service) + 60)
	b.WriteString(migrationID)
	b.WriteByte('/')
	b.WriteString(service)
	b.WriteByte('/')
	b.WriteString(mode.String())
	if attempt != 0 {
		b.WriteByte('@')
		b.WriteString(strconv.FormatUint(uint64(attempt), 10))
	}
	b.WriteByte('/')
	b.WriteString(strconv.FormatUint(syncToken, 10))
	b.WriteByte('/')
	b.WriteString(strconv.FormatUint(cursor, 10))
	return b.String()
}

// checkpointName is the durable name of the import checkpoint of service in
// a migration (a store cursor name: at most 256 bytes, no NUL).
// epochCheckpoint is the Checkpoints name of the routing epoch a store
// served under (ServeOptions.RoutingEpoch).
const epochCheckpoint = "contractnats/routing-epoch"

func checkpointName(migrationID, service string) string {
	return "contractnats/import/" + migrationID + "/" + service
}
