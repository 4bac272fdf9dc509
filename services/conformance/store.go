package conformance

import (
	"errors"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// StoreUser is the user path of a services/store.Store (PutAt, DeleteAt,
// GetAt): a Harness for a participant over the Pebble store that has no
// service of its own in front.
func StoreUser(st *store.Store) UserPath {
	return UserPath{
		Write: func(resource, id string, data []byte, refs []string, a contract.Authority) (contract.Record, error) {
			rec := store.Record{ID: id, Kind: "note", Data: data, Refs: refs}
			got, err := st.PutAt(resource, rec, true, a)
			if errors.Is(err, store.ErrExists) {
				got, err = st.PutAt(resource, rec, false, a)
			}
			return got, err
		},
		Delete: func(resource, id string, a contract.Authority) (bool, error) {
			r, err := st.DeleteAt(resource, id, false, a)
			return r.Tombstoned, err
		},
		Read: func(resource, id string, a contract.Authority) (contract.Record, bool, error) {
			rec, err := st.GetAt(resource, id, a)
			if errors.Is(err, store.ErrNotFound) {
				return contract.Record{}, false, nil
			}
			return rec, err == nil, err
		},
	}
}
