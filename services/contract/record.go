package contract

// Record is one service-owned record of a resource (paper 001 §3.2).
type Record struct {
	// ID is unique within the resource. Client-supplied ids are allowed:
	// non-empty, at most 128 bytes, no NUL.
	ID string
	// Kind is the record type inside the service ("message", "reaction");
	// at most 128 bytes, no NUL, may be empty.
	Kind string
	// Version is bumped by the store on every change at the source. Import
	// keeps the sender's version and applies only newer ones (paper 001 A3).
	Version uint64
	// Seq is the per-resource change sequence of the record's last change at
	// the store that holds it. The store sets it; a value passed in is
	// ignored.
	Seq uint64
	// CreatedAt (unix nanoseconds, >= 0) decides the record's time slice. A
	// store sets it on first write if it is 0 and never changes it
	// afterwards.
	CreatedAt int64
	// UpdatedAt (unix nanoseconds) is the time of the last change at the
	// source.
	UpdatedAt int64
	// Deleted marks a tombstone. A tombstone's Data and Refs are always empty:
	// content and personal data are stripped at once (paper 001 §4.3).
	Deleted bool
	// DeletedAt (unix nanoseconds) is when the record was deleted.
	DeletedAt int64
	// Data is the opaque content (the service's own encoding).
	Data []byte
	// Refs names dependent resources referenced by the record ("media/m1");
	// export reports them so the orchestrator can start child migrations.
	Refs []string
}

// SliceDigest summarises the live records of one time slice of a resource.
// Two stores hold the same live records in a slice exactly when (barring a
// hash collision) their digests of that slice are equal, so validation
// compares full content of every record without reading them (paper 001
// §5.3 compares a sample; this compares everything).
type SliceDigest struct {
	// Slice is the slice start, unix nanoseconds (SliceOf).
	Slice int64
	// Count is the number of live records whose CreatedAt is in the slice.
	Count uint64
	// Hash is the sum modulo 2^128, big-endian, of the RecordHash of
	// those records: an order-independent multiset hash that a write
	// updates by subtracting the old record's hash and adding the new
	// one's (AddHash, SubHash). docs/participant.md "Digests" gives the
	// bytes.
	Hash [16]byte
}
