package contractnats

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/cutover/cutover/services/contract"
)

// Client calls the contract of one service in one region over NATS (the
// orchestrator's side). Every method sends one request (ReadSlice may split
// into several) and returns errors as *contract.Error: a remote error as
// the server's code, message, retry-after and lock; CodeUnavailable when no
// server of the service answers in the region (no responders) or the
// request timed out or was canceled, so the caller may retry; CodeInvalid
// for a bad migration id, or a bad region or service given to Dial. Every
// operation is idempotent, so retrying any of them is safe. A Client is safe
// for concurrent use by any goroutine.
type Client struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	region  string
	service string
	timeout time.Duration
	keys    Keys            // verify replies (WithKeys); nil: none
	err     *contract.Error // a bad Dial argument, returned by every call
}

// ClientOption configures Dial.
type ClientOption func(*Client)

// WithTimeout sets the request timeout applied when a call's context has no
// deadline (default DefaultTimeout). d <= 0 keeps the default.
func WithTimeout(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithKeys makes the client accept only replies signed with the key of
// the region it calls (signing.go): any other reply — unsigned, signed
// with another region's key, or for another request — is refused with
// CodeInternal. nil keys accept any reply (development).
func WithKeys(keys Keys) ClientOption {
	return func(c *Client) { c.keys = keys }
}

// Dial returns a client of service's contract in region over nc; js reads
// pages (FetchPage). It does no I/O: a missing server shows up as
// CodeUnavailable on the first call, and a bad region or service name as
// CodeInvalid on every call.
func Dial(nc *nats.Conn, js jetstream.JetStream, region, service string, opts ...ClientOption) *Client {
	c := &Client{nc: nc, js: js, region: region, service: service, timeout: DefaultTimeout}
	for _, o := range opts {
		o(c)
	}
	if err := validateRegion(region); err != nil {
		c.err = invalid("%v", err)
	} else if err := ValidateService(service); err != nil {
		c.err = invalid("%v", err)
	} else if nc == nil {
		c.err = invalid("contractnats: nil connection")
	}
	return c
}

// Region returns the region the client calls.
func (c *Client) Region() string { return c.region }

// Service returns the service the client calls.
func (c *Client) Service() string { return c.service }

// ExportToStream asks the source to export one page (paper 001 (A2)) and
// publish it to PagesStream under migrationID; it returns where the page
// went and the cursor of the next one. Asking again for the same position
// (same mode, token and cursor) within PagesDuplicateWindow returns the page
// already stored (PageRef.Duplicate). Errors: CodeInvalid (bad migration
// id, mode, resource, limit), CodeTooLarge, CodeUnavailable, and the
// participant's own codes.
func (c *Client) ExportToStream(ctx context.Context, migrationID string, req contract.ExportRequest) (PageRef, error) {
	if err := ValidateMigrationID(migrationID); err != nil {
		return PageRef{}, invalid("%v", err)
	}
	var ref PageRef
	err := c.call(ctx, OpExport, &exportRequest{Migration: migrationID, Request: req}, &ref)
	return ref, err
}

// Authorize installs a at resource (contract.Participant.Authorize) and
// returns the authority the service holds afterwards; a zero a only reads
// it. Errors: CodeConflict (a stale or conflicting a; nothing changes),
// CodeInvalid, CodeUnavailable.
func (c *Client) Authorize(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	var r authorityReply
	err := c.call(ctx, OpAuthority, &authorityRequest{Resource: resource, Authority: a}, &r)
	return r.Authority, err
}

var _ contract.Repairer = (*Client)(nil)

// Repair replaces resource's authority record at the service with a and
// returns the record it replaced (contract.Repairer, `cutover fence
// clear`). The caller checks the approvals and records the audit event.
func (c *Client) Repair(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	var r authorityReply
	err := c.call(ctx, OpRepair, &authorityRequest{Resource: resource, Authority: a}, &r)
	return r.Authority, err
}

// ImportFromStream asks the target to import the page at seq of
// PagesStream under a, which must be a page of this client's service in
// migrationID, and to raise its checkpoint to seq. Importing a page again
// is harmless and reports Applied 0 (paper 001 (A3)). Errors: CodeInvalid
// (bad migration id, seq 0, the message is another migration's or
// service's, or not a page), CodeNotFound (no message at seq), CodeConflict
// (a refused authority; nothing changes), CodeUnavailable, and the
// participant's own codes.
func (c *Client) ImportFromStream(ctx context.Context, migrationID, resource string, a contract.Authority, seq uint64) (contract.ImportResult, error) {
	if seq == 0 {
		return contract.ImportResult{}, invalid("import of page sequence 0")
	}
	return c.Import(ctx, migrationID, contract.PageInfo{Seq: seq, Resource: resource, Authority: a})
}

// Import asks the target to carry out one import request
// (contract.Participant.Import): under p.Authority, reset if p.Reset,
// apply the page at p.Seq of PagesStream or the inline p.Page (neither:
// no page), and answer with the digests if p.Digests. Errors: those of
// ImportFromStream; CodeInvalid for a request with both a sequence and an
// inline page, or without a resource.
func (c *Client) Import(ctx context.Context, migrationID string, p contract.PageInfo) (contract.ImportResult, error) {
	if err := ValidateMigrationID(migrationID); err != nil {
		return contract.ImportResult{}, invalid("%v", err)
	}
	res := p.Resource
	if res == "" && p.Page != nil {
		res = p.Page.Resource
	}
	switch {
	case p.Seq > 0 && p.Page != nil:
		return contract.ImportResult{}, invalid("import of a page both inline and at sequence %d", p.Seq)
	case res == "":
		return contract.ImportResult{}, invalid("import without a resource")
	}
	req := importRequest{Migration: migrationID, Resource: res, Authority: p.Authority, Seq: p.Seq, Page: p.Page, Reset: p.Reset, Digests: p.Digests}
	var r contract.ImportResult
	err := c.call(ctx, OpImport, &req, &r)
	return r, err
}

// Checkpoint returns the highest page sequence of migrationID that the
// service imported in this region, 0 if none. Errors: CodeInvalid,
// CodeUnavailable, CodeInternal.
func (c *Client) Checkpoint(ctx context.Context, migrationID string) (uint64, error) {
	if err := ValidateMigrationID(migrationID); err != nil {
		return 0, invalid("%v", err)
	}
	var r checkpointReply
	err := c.call(ctx, OpCheckpoint, &checkpointRequest{Migration: migrationID}, &r)
	return r.Seq, err
}

// Digests returns the per-slice digests of resource's live records,
// under a when it is not zero (contract.Participant.Digests).
func (c *Client) Digests(ctx context.Context, resource string, a contract.Authority) ([]contract.SliceDigest, error) {
	var d []contract.SliceDigest
	err := c.call(ctx, OpDigests, &authorityRequest{Resource: resource, Authority: a}, &d)
	return d, err
}

// ReadSlice returns the live records of resource with CreatedAt in
// [from, to) (contract.Participant.ReadSlice). When the records do not fit
// one reply (CodeTooLarge), it reads the two halves of the interval, down to
// single nanoseconds, and concatenates them, which keeps the (CreatedAt, ID)
// order.
func (c *Client) ReadSlice(ctx context.Context, resource string, from, to int64) ([]contract.Record, error) {
	var recs []contract.Record
	err := c.call(ctx, OpSlice, &sliceRequest{Resource: resource, From: from, To: to}, &recs)
	var se *contract.Error
	if err == nil || !errors.As(err, &se) || se.Code != contract.CodeTooLarge || to-from < 2 {
		return recs, err
	}
	mid := from + (to-from)/2
	lo, err := c.ReadSlice(ctx, resource, from, mid)
	if err != nil {
		return nil, err
	}
	hi, err := c.ReadSlice(ctx, resource, mid, to)
	if err != nil {
		return nil, err
	}
	return append(lo, hi...), nil
}

// Cleanup deletes resource's records at the service in this region under
// a (a secondary's authority) and returns how many were removed
// (contract.Participant.Cleanup). Errors: CodeConflict (refused: nothing
// removed), CodeInvalid, CodeUnavailable.
func (c *Client) Cleanup(ctx context.Context, resource string, a contract.Authority) (int, error) {
	var r cleanupReply
	err := c.call(ctx, OpCleanup, &authorityRequest{Resource: resource, Authority: a}, &r)
	return r.Removed, err
}

// FetchPage reads the page of this client's service at seq of PagesStream
// directly from the stream (see the package function FetchPage), for tools
// and tests that want to see what an export published.
func (c *Client) FetchPage(ctx context.Context, migrationID string, seq uint64) (contract.Page, error) {
	if c.err != nil {
		return contract.Page{}, c.err
	}
	if c.js == nil {
		return contract.Page{}, invalid("contractnats: client has no JetStream")
	}
	return FetchPage(ctx, c.js, migrationID, c.service, seq)
}

// call sends req to operation op and decodes the reply into resp (nil: no
// body expected).
func (c *Client) call(ctx context.Context, op string, req, resp any) error {
	data, err := c.request(ctx, op, req)
	if err != nil || resp == nil {
		return err
	}
	if err := decode(data, resp); err != nil {
		return contract.Errorf(contract.CodeInternal, "contract %s %s/%s: reply: %v", op, c.region, c.service, err)
	}
	return nil
}

// request sends req to operation op and returns the reply's body.
func (c *Client) request(ctx context.Context, op string, req any) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	ctx, cancel := withDefaultTimeout(ctx, c.timeout)
	defer cancel()
	body, err := encode(req)
	if err != nil {
		return nil, err
	}
	subject := EndpointSubject(c.region, c.service, op)
	msg := nats.NewMsg(subject)
	msg.Data = body
	nonce := newNonce()
	msg.Header.Set(HeaderNonce, nonce)
	if dl, ok := ctx.Deadline(); ok {
		// Ask the server to give up a little before we do, so that its
		// error reply (not our timeout) is what the caller sees.
		left := time.Until(dl)
		left -= min(left/10, time.Second)
		msg.Header.Set(HeaderTimeout, strconv.FormatInt(max(left.Milliseconds(), 1), 10))
		msg.Header.Set(HeaderDeadline, strconv.FormatInt(time.Now().Add(left).UnixMilli(), 10))
	}
	reply, err := c.nc.RequestMsgWithContext(ctx, msg)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, contract.Errorf(contract.CodeUnavailable,
			"contract %s of service %q in region %q: no server answers on %s", op, c.service, c.region, subject)
	}
	if err != nil {
		return nil, fromNATS(fmt.Sprintf("contract %s %s/%s", op, c.region, c.service), err)
	}
	if err := checkReply(c.keys, c.region, subject, nonce, reply); err != nil {
		return nil, err
	}
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
		return nil, remoteError(code, reply)
	}
	return reply.Data, nil
}

// remoteError rebuilds the server's *contract.Error from an error reply; a
// body that does not decode falls back to micro's headers.
func remoteError(code string, reply *nats.Msg) *contract.Error {
	var e contract.Error
	if len(reply.Data) > 0 && decode(reply.Data, &e) == nil && e.Code != "" {
		e.Code = knownCode(e.Code)
		return &e
	}
	return &contract.Error{Code: knownCode(contract.Code(code)), Message: reply.Header.Get(micro.ErrorHeader)}
}

// knownCode keeps the closed set of codes closed: anything else is internal.
func knownCode(c contract.Code) contract.Code {
	switch c {
	case contract.CodeInvalid, contract.CodeUnauthorized, contract.CodeForbidden, contract.CodeNotFound,
		contract.CodeConflict, contract.CodeTooLarge, contract.CodeLocked, contract.CodeUnavailable,
		contract.CodeInternal:
		return c
	}
	return contract.CodeInternal
}
