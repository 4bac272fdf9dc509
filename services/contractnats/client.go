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

// ImportFromStream asks the target to import the page at seq of
// PagesStream, which must be a page of this client's service in
// migrationID, and to raise its checkpoint to seq. Importing a page again
// is harmless and reports Applied 0 (paper 001 (A3)). Errors: CodeInvalid
// (bad migration id, seq 0, the message is another migration's or
// service's, or not a page), CodeNotFound (no message at seq), CodeUnavailable,
// and the participant's own codes.
func (c *Client) ImportFromStream(ctx context.Context, migrationID string, seq uint64) (contract.ImportResult, error) {
	return c.ImportGranted(ctx, migrationID, seq, "")
}

// ImportGranted is ImportFromStream under the import grant of token
// (contract.ImportGate): the target applies the page only while that grant
// is in force; otherwise CodeConflict and nothing changes. "" is ungated.
func (c *Client) ImportGranted(ctx context.Context, migrationID string, seq uint64, token string) (contract.ImportResult, error) {
	return c.Import(ctx, migrationID, contract.PageInfo{Seq: seq, Grant: token})
}

// Import asks the target to carry out one import request
// (contract.ApplyImport): grant p.Grant until p.GrantUntil if set, apply
// the page at p.Seq of PagesStream or the inline p.Page, then seal if
// p.Seal (the reply then carries the target's digests). A request needs a
// page (Seq or Page) unless it seals; a seal without a page names
// p.Resource. Errors: those of ImportGranted; CodeInvalid for a request
// with no page and no seal, or with both a sequence and an inline page.
func (c *Client) Import(ctx context.Context, migrationID string, p contract.PageInfo) (contract.ImportResult, error) {
	if err := ValidateMigrationID(migrationID); err != nil {
		return contract.ImportResult{}, invalid("%v", err)
	}
	switch {
	case p.Seq == 0 && p.Page == nil && !p.Seal:
		return contract.ImportResult{}, invalid("import of no page (no sequence, no inline page)")
	case p.Seq > 0 && p.Page != nil:
		return contract.ImportResult{}, invalid("import of a page both inline and at sequence %d", p.Seq)
	}
	req := importRequest{Migration: migrationID, Seq: p.Seq, Grant: p.Grant, Page: p.Page, Resource: p.Resource, Seal: p.Seal}
	if p.Grant != "" && !p.GrantUntil.IsZero() {
		req.GrantUntil = p.GrantUntil.UnixMilli()
	}
	var res contract.ImportResult
	err := c.call(ctx, OpImport, &req, &res)
	return res, err
}

var _ contract.ImportGate = (*Client)(nil)

// GrantImport lets imports under token be applied to resource at the
// service until expiry (contract.ImportGate; expiry travels in unix ms).
func (c *Client) GrantImport(ctx context.Context, resource, token string, expiry time.Time) error {
	if token == "" || expiry.IsZero() {
		return invalid("grant without token or expiry")
	}
	return c.call(ctx, OpGrant, &grantRequest{Resource: resource, Token: token, Expiry: expiry.UnixMilli()}, nil)
}

// ResetForCopy deletes resource's records at the service under token's
// import grant before a full copy (contract.ImportGate).
func (c *Client) ResetForCopy(ctx context.Context, resource, token string) (int, error) {
	if token == "" {
		return 0, invalid("reset without token")
	}
	var r cleanupReply
	err := c.call(ctx, OpReset, &grantRequest{Resource: resource, Token: token}, &r)
	return r.Removed, err
}

// RevokeImport ends token's import grant at resource and retires the token
// (contract.ImportGate).
func (c *Client) RevokeImport(ctx context.Context, resource, token string) error {
	if token == "" {
		return invalid("revoke without token")
	}
	return c.call(ctx, OpRevoke, &grantRequest{Resource: resource, Token: token}, nil)
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

// Digests returns the per-slice digests of resource's live records
// (contract.Participant.Digests).
func (c *Client) Digests(ctx context.Context, resource string) ([]contract.SliceDigest, error) {
	var d []contract.SliceDigest
	err := c.call(ctx, OpDigests, &resourceRequest{Resource: resource}, &d)
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

// SetFence sets or raises resource's fence at the service
// (contract.Participant.SetFence; DESIGN.md "Two layers of enforcement").
// The fence token travels in the request and is never logged here.
func (c *Client) SetFence(ctx context.Context, resource string, f contract.Fence) error {
	return c.call(ctx, OpFence, &fenceRequest{Resource: resource, Fence: f}, nil)
}

// FenceAndExport sets resource's fence f, then exports one page for
// migrationID by req, in one request (contract.FenceExporter): the page is
// exported after the fence is set. exported is false when the server
// predates it (the fence is set, nothing exported: export on your own).
// Errors: those of SetFence and ExportToStream; CodeInvalid for a request
// of another resource.
func (c *Client) FenceAndExport(ctx context.Context, migrationID, resource string, f contract.Fence, req contract.ExportRequest) (ref PageRef, exported bool, err error) {
	if err := ValidateMigrationID(migrationID); err != nil {
		return PageRef{}, false, invalid("%v", err)
	}
	if req.Resource != resource {
		return PageRef{}, false, invalid("fence of %q exporting %q", resource, req.Resource)
	}
	data, err := c.request(ctx, OpFence, &fenceRequest{Resource: resource, Fence: f, Migration: migrationID, Export: &req})
	if err != nil || len(data) == 0 {
		return PageRef{}, false, err
	}
	var r fenceReply
	if err := decode(data, &r); err != nil {
		return PageRef{}, false, contract.Errorf(contract.CodeInternal, "contract %s %s/%s: reply: %v", OpFence, c.region, c.service, err)
	}
	return r.Ref, r.Exported, nil
}

// ClearFence removes resource's fence set under token
// (contract.Participant.ClearFence).
func (c *Client) ClearFence(ctx context.Context, resource, token string) error {
	return c.call(ctx, OpUnfence, &unfenceRequest{Resource: resource, Token: token}, nil)
}

var _ contract.FenceAdmin = (*Client)(nil)

// ForceClearFence removes resource's active fence at the service whatever
// its token and returns it (contract.FenceAdmin, `cutover fence clear`).
// The caller checks the approvals and records the audit event.
func (c *Client) ForceClearFence(ctx context.Context, resource string) (contract.Fence, error) {
	var r forceUnfenceReply
	err := c.call(ctx, OpForceUnfence, &resourceRequest{Resource: resource}, &r)
	return r.Fence, err
}

// Cleanup deletes resource's records at the service in this region and
// returns how many were removed (contract.Participant.Cleanup).
func (c *Client) Cleanup(ctx context.Context, resource string) (int, error) {
	var r cleanupReply
	err := c.call(ctx, OpCleanup, &resourceRequest{Resource: resource}, &r)
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
