package conformance

import (
	"context"

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
			if codeOf(err) == contract.CodeConflict && got.ID != "" { // live: update it
				got, err = p.Put(ctx, resource, rec, false, a)
			}
			return got, err
		},
		Delete: func(resource, id string, a contract.Authority) (bool, error) {
			return p.Delete(ctx, resource, id, false, a)
		},
		Read: func(resource, id string, a contract.Authority) (contract.Record, bool, error) {
			rec, err := p.Get(ctx, resource, id, a)
			if codeOf(err) == contract.CodeNotFound {
				return contract.Record{}, false, nil
			}
			return rec, err == nil, err
		},
	}
}
