package events

import (
	"reflect"
	"time"
)

var registry = map[string]func() any{}

func register[T Body]() {
	var z T
	registry[z.Type()] = func() any { return new(T) }
}

func deref(p any) Body { return reflect.ValueOf(p).Elem().Interface().(Body) }

// Registered reports whether typ is a known command or event type.
func Registered(typ string) bool { _, ok := registry[typ]; return ok }

func init() {
	register[Start]()
	register[StartTenant]()
	register[Cancel]()
	register[ForceRelease]()
	register[FenceClear]()
	register[Pause]()
	register[Resume]()
	register[Throttle]()

	register[Requested]()
	register[PreLocked]()
	register[Converged]()
	register[Dropped]()
	register[HardDeleteLocked]()
	register[PageCopied]()
	register[Renewed]()
	register[WriteLocked]()
	register[DeltaCopied]()
	register[PagesCopied]()
	register[DeltasCopied]()
	register[Validated]()
	register[Swapped]()
	register[CleanupScheduled]()
	register[Completed]()
	register[CleanedUp]()
	register[StepFailed]()
	register[RolledBack]()
	register[Rescheduled]()
	register[Failed]()
	register[ChildStarted]()
	register[CancelRequested]()
	register[TenantStarted]()
	register[TenantProgress]()
	register[ForceReleased]()
	register[FenceForceCleared]()
	register[AdminRefused]()
	register[Paused]()
	register[Resumed]()
	register[Throttled]()
}

var timeType = reflect.TypeOf(time.Time{})

// utcTimes sets every time.Time reachable through structs, pointers and
// slices under v to UTC, so decoded values compare equal whatever the
// process's time zone.
func utcTimes(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			utcTimes(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == timeType {
			if v.CanSet() {
				v.Set(reflect.ValueOf(utc(v.Interface().(time.Time))))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				utcTimes(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			utcTimes(v.Index(i))
		}
	}
}

// BodyTypes returns every registered command and event type name with the
// Go type of its body (tools: docs/schema, `cutover decode`).
func BodyTypes() map[string]reflect.Type {
	out := make(map[string]reflect.Type, len(registry))
	for name, mk := range registry {
		out[name] = reflect.TypeOf(mk()).Elem()
	}
	return out
}

// WireEnvelopeType is the Go type whose msgpack encoding is the envelope on
// the wire (docs/wire-format.md): Body as the msgpack bytes of its type's
// encoding ("p"), State likewise ("s").
func WireEnvelopeType() reflect.Type { return reflect.TypeOf(wireEnvelope{}) }
