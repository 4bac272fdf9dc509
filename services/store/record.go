package store

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/services/contract"
)

// Record is the contract's record (contract.Record): one record of one
// resource in this service.
type Record = contract.Record

// DeleteResult tells the caller what Delete did.
type DeleteResult struct {
	// Tombstoned is true when admission (tombstone deletes in force) turned the delete into a
	// tombstone, false when the record was removed physically.
	Tombstoned bool
}

// validateRecord checks the parts of rec that are keys or index fields.
func validateRecord(r *Record) error {
	if err := validID(r.ID); err != nil {
		return err
	}
	if err := validKind(r.Kind); err != nil {
		return err
	}
	if r.CreatedAt < 0 || r.UpdatedAt < 0 || r.DeletedAt < 0 {
		return invalidf("record %q: negative timestamp", r.ID)
	}
	for _, ref := range r.Refs {
		if err := validResource(ref); err != nil {
			return invalidf("record %q: ref: %w", r.ID, err)
		}
	}
	return nil
}

// storedRecord is the msgpack form of a Record. It is separate from Record so
// that the public type carries no storage tags and so that the tombstone
// expiry, fixed when the tombstone is written, travels with it.
//
// Data is a string here, not []byte: msgpack v5 allocates a []byte field at
// the length its header declares before reading, so a corrupt header could
// ask for gigabytes, while strings are read in bounded steps.
type storedRecord struct {
	ID        string   `msgpack:"i"`
	Kind      string   `msgpack:"k,omitempty"`
	Version   uint64   `msgpack:"v"`
	Seq       uint64   `msgpack:"s"`
	CreatedAt int64    `msgpack:"c"`
	UpdatedAt int64    `msgpack:"u,omitempty"`
	Deleted   bool     `msgpack:"d,omitempty"`
	DeletedAt int64    `msgpack:"da,omitempty"`
	ExpiresAt int64    `msgpack:"x,omitempty"`
	Data      string   `msgpack:"b,omitempty"`
	Refs      []string `msgpack:"r,omitempty"`
}

// entry is a record as held in a transaction: the record and, for a
// tombstone, its expiry-index time.
type entry struct {
	Record
	expiresAt int64
}

func encodeEntry(e *entry) ([]byte, error) {
	return msgpack.Marshal(&storedRecord{
		ID: e.ID, Kind: e.Kind, Version: e.Version, Seq: e.Seq,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
		Deleted: e.Deleted, DeletedAt: e.DeletedAt, ExpiresAt: e.expiresAt,
		Data: string(e.Data), Refs: e.Refs,
	})
}

// decodeEntry decodes a stored record; the result shares no memory with b.
func decodeEntry(b []byte) (entry, error) {
	var sr storedRecord
	if err := msgpack.Unmarshal(b, &sr); err != nil {
		return entry{}, err
	}
	var data []byte
	if sr.Data != "" {
		data = []byte(sr.Data)
	}
	if len(sr.Refs) == 0 {
		sr.Refs = nil
	}
	return entry{
		Record: Record{
			ID: sr.ID, Kind: sr.Kind, Version: sr.Version, Seq: sr.Seq,
			CreatedAt: sr.CreatedAt, UpdatedAt: sr.UpdatedAt,
			Deleted: sr.Deleted, DeletedAt: sr.DeletedAt,
			Data: data, Refs: sr.Refs,
		},
		expiresAt: sr.ExpiresAt,
	}, nil
}

// resState is the per-resource counter value: the change sequence (the sync
// token) and the live and tombstone counts.
type resState struct {
	Seq        uint64 `msgpack:"s"`
	Live       uint64 `msgpack:"l"`
	Tombstones uint64 `msgpack:"t"`
}

// formatInfo is stored under formatKey on first open.
type formatInfo struct {
	Version    int   `msgpack:"v"`
	SliceWidth int64 `msgpack:"w"`
}

// formatVersion 3: one authority record per resource (contract 2.0);
// slice digests include Version and UpdatedAt (since format 2). Older
// stores are refused (ErrFormat).
const formatVersion = 3
