package events

import "strings"

// Subjects and stream names of the migration streams (DESIGN.md "The
// migration, event-sourced").
const (
	// CommandPrefix prefixes command subjects: cutover.cmd.<type>.
	CommandPrefix = "cutover.cmd."
	// EventPrefix prefixes event subjects: cutover.evt.<migrationID>.
	EventPrefix = "cutover.evt."
	// WorkPrefix prefixes work subjects: cutover.work.<migrationID>.
	WorkPrefix = "cutover.work."
	// IndexPrefix prefixes the resource index:
	// cutover.idx.<routing key>.<migrationID> (the routing key is the
	// resource's kvrouting key, "kind.escaped-id": two subject tokens).
	IndexPrefix = "cutover.idx."

	// CommandStream is the work-queue stream of commands.
	CommandStream = "MIGRATION_CMDS"
	// EventStream is the stream of migration events (one subject per
	// migration aggregate).
	EventStream = "MIGRATION_EVENTS"
	// WorkStream is the work-queue stream holding one "drive migration X"
	// message per active migration.
	WorkStream = "MIGRATION_WORK"
	// IndexStream holds one message per migration of a resource, on
	// IndexSubject: a resource's migrations are found by a subject filter,
	// not by reading every migration's events.
	IndexStream = "MIGRATION_INDEX"
)

// CommandSubject returns the subject of a command type: cutover.cmd.<type>.
func CommandSubject(typ string) string { return CommandPrefix + typ }

// EventSubject returns the subject of one migration's events:
// cutover.evt.<migrationID>.
func EventSubject(migrationID string) string { return EventPrefix + migrationID }

// WorkSubject returns the work subject of one migration:
// cutover.work.<migrationID>.
func WorkSubject(migrationID string) string { return WorkPrefix + migrationID }

// IndexSubject is the index subject of migration id of the resource whose
// routing key is key: cutover.idx.<key>.<id>.
func IndexSubject(key, id string) string { return IndexPrefix + key + "." + id }

// IndexFilter is the subject filter of every migration of the resource
// whose routing key is key.
func IndexFilter(key string) string { return IndexPrefix + key + ".*" }

// MigrationIDFromSubject returns the migration id of an event or work
// subject, and false for any other subject.
func MigrationIDFromSubject(subject string) (string, bool) {
	for _, p := range []string{EventPrefix, WorkPrefix} {
		if id, ok := strings.CutPrefix(subject, p); ok && id != "" && !strings.ContainsAny(id, ".*> ") {
			return id, true
		}
	}
	return "", false
}

// ValidID reports whether id can be used as a migration id: one subject
// token of [A-Za-z0-9_-], at most 128 bytes.
func ValidID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
