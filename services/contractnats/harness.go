package contractnats

import (
	"context"

	"github.com/cutover/cutover/services/conformance"
	"github.com/cutover/cutover/services/contract"
)

// The test harness: three endpoints beside the contract's, served only
// when ServeOptions.Harness is set (a participant in test mode), through
// which `cutover conformance` drives the participant's user path — its
// writes, deletes and reads, each stamped with an authority as a router
// would stamp it — with nothing but NATS (docs/participant.md "Test
// harness"). A production participant never serves them: they write
// through the user path for whoever may publish on the contract's
// subjects.
const (
	// OpHarnessWrite creates the live record, or updates it when it is
	// live: request {"res","id","data","refs","auth"}, reply the stored
	// record.
	OpHarnessWrite = "harness-write"
	// OpHarnessDelete deletes the live record: request {"res","id","auth"},
	// reply {"tombstoned"}: whether admission turned the delete into a
	// tombstone.
	OpHarnessDelete = "harness-delete"
	// OpHarnessRead reads the live record: request {"res","id","auth"},
	// reply {"found","rec"}.
	OpHarnessRead = "harness-read"
)

// HarnessOps lists the harness's operations.
var HarnessOps = []string{OpHarnessWrite, OpHarnessDelete, OpHarnessRead}

type (
	harnessRequest struct {
		Resource  string             `msgpack:"res"`
		ID        string             `msgpack:"id"`
		Data      []byte             `msgpack:"data,omitempty"`
		Refs      []string           `msgpack:"refs,omitempty"`
		Authority contract.Authority `msgpack:"auth"`
	}
	harnessDeleteReply struct {
		Tombstoned bool `msgpack:"tombstoned"`
	}
	harnessReadReply struct {
		Found  bool            `msgpack:"found"`
		Record contract.Record `msgpack:"rec"`
	}
)

// harnessEndpoints are the handlers of u.
func (s *Server) harnessEndpoints(u *conformance.UserPath) []endpoint {
	decodeReq := func(op string, body []byte) (harnessRequest, error) {
		var r harnessRequest
		if err := decode(body, &r); err != nil {
			return r, invalid("%s request: %v", op, err)
		}
		return r, nil
	}
	return []endpoint{
		{OpHarnessWrite, func(_ context.Context, body []byte) (any, error) {
			r, err := decodeReq(OpHarnessWrite, body)
			if err != nil {
				return nil, err
			}
			return u.Write(r.Resource, r.ID, r.Data, r.Refs, r.Authority)
		}},
		{OpHarnessDelete, func(_ context.Context, body []byte) (any, error) {
			r, err := decodeReq(OpHarnessDelete, body)
			if err != nil {
				return nil, err
			}
			ts, err := u.Delete(r.Resource, r.ID, r.Authority)
			return harnessDeleteReply{Tombstoned: ts}, err
		}},
		{OpHarnessRead, func(_ context.Context, body []byte) (any, error) {
			r, err := decodeReq(OpHarnessRead, body)
			if err != nil {
				return nil, err
			}
			rec, found, err := u.Read(r.Resource, r.ID, r.Authority)
			return harnessReadReply{Found: found, Record: rec}, err
		}},
	}
}

// Harness is the user path of the participant behind c, through its
// test-mode harness (ServeOptions.Harness): what `cutover conformance`
// drives. A participant serving no harness answers every call
// CodeUnavailable ("no server answers").
func (c *Client) Harness() conformance.UserPath {
	ctx := context.Background()
	return conformance.UserPath{
		Write: func(resource, id string, data []byte, refs []string, a contract.Authority) (contract.Record, error) {
			var rec contract.Record
			err := c.call(ctx, OpHarnessWrite, &harnessRequest{Resource: resource, ID: id, Data: data, Refs: refs, Authority: a}, &rec)
			return rec, err
		},
		Delete: func(resource, id string, a contract.Authority) (bool, error) {
			var r harnessDeleteReply
			err := c.call(ctx, OpHarnessDelete, &harnessRequest{Resource: resource, ID: id, Authority: a}, &r)
			return r.Tombstoned, err
		},
		Read: func(resource, id string, a contract.Authority) (contract.Record, bool, error) {
			var r harnessReadReply
			err := c.call(ctx, OpHarnessRead, &harnessRequest{Resource: resource, ID: id, Authority: a}, &r)
			return r.Record, r.Found, err
		},
	}
}

// RemoteParticipant is the participant behind c as a contract.Participant,
// for the conformance kit: exports are asked for inline (a page too large
// for a reply is published and fetched back from PagesStream) and imports
// carry their page, all under migrationID, which names the run's pages.
func RemoteParticipant(c *Client, migrationID string) contract.Participant {
	return remote{c, migrationID}
}

type remote struct {
	*Client
	migration string
}

func (r remote) Export(ctx context.Context, req contract.ExportRequest) (contract.Page, error) {
	req.Inline = true
	ref, err := r.ExportToStream(ctx, r.migration, req)
	switch {
	case err != nil:
		return contract.Page{}, err
	case ref.Page != nil:
		return *ref.Page, nil
	case ref.Seq != 0:
		return r.FetchPage(ctx, r.migration, ref.Seq)
	}
	// An empty page is neither published nor returned: rebuild it.
	cursor := req.Cursor
	if req.Mode == contract.Delta && cursor < req.SyncToken {
		cursor = req.SyncToken
	}
	return contract.Page{Service: r.Service(), Resource: req.Resource, Mode: req.Mode, SyncToken: ref.SyncToken,
		Cursor: cursor, Next: ref.Next, More: ref.More, Dependents: ref.Dependents}, nil
}

func (r remote) Import(ctx context.Context, req contract.ImportRequest) (contract.ImportResult, error) {
	return r.Client.Import(ctx, r.migration, contract.PageInfo{Page: req.Page, Resource: req.Resource,
		Authority: req.Authority, Reset: req.Reset, Digests: req.Digests})
}
