package conformance

import (
	"context"
	"errors"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
)

// KitUser is the user path of a participant built with the participant kit
// (participant.Participant's Put, Delete and Get): a Harness for an adapter
// of the kit (a participant.Storage) that has no service of its own in
// front. Records are written with the kind "note".
func KitUser(p *participant.Participant) UserPath {
	ctx := context.Background()
	return UserPath{
		Write: func(resource, id string, data []byte, refs []string, a contract.Authority) (contract.Record, error) {
			rec := contract.Record{ID: id, Kind: "note", Data: data, Refs: refs}
			got, err := p.Put(ctx, resource, rec, true, a)
			if errors.Is(err, participant.ErrExists) { // live: update it
				got, err = p.Put(ctx, resource, rec, false, a)
			}
			return got, toError(err)
		},
		Delete: func(resource, id string, a contract.Authority) (bool, error) {
			ts, err := p.Delete(ctx, resource, id, false, a)
			return ts, toError(err)
		},
		Read: func(resource, id string, a contract.Authority) (contract.Record, bool, error) {
			rec, err := p.Get(ctx, resource, id, a)
			if errors.Is(err, participant.ErrNotFound) {
				return contract.Record{}, false, nil
			}
			return rec, err == nil, toError(err)
		},
	}
}

// toError is participant.ToError as an error (nil stays nil).
func toError(err error) error {
	if e := participant.ToError(err); e != nil {
		return e
	}
	return nil
}
