package contractnats

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/services/contract"
)

// DefaultValidationTimeout bounds one validation read through the API when
// DirectoryOptions.HTTPClient is nil.
const DefaultValidationTimeout = 5 * time.Second

// maxValidationBody caps the body of a validation read.
const maxValidationBody = 64 << 20

// DirectoryOptions configures NewDirectory. Zero values mean the documented
// defaults: validation digests are then read through the contract.
type DirectoryOptions struct {
	// APIURL returns the base URL of the user-facing API through which
	// validation reads digests (paper 001 §5.3: validate through the path
	// users take); nil, or "" returned, reads them through the contract. It
	// is a function because the API may start after the directory is built.
	APIURL func() string
	// APIDigestsPath returns the path, under APIURL, of the API's
	// region-pinned route that serves the slice digests of resource at
	// region (api.InternalDigestsPath); each read adds the query parameter
	// service=<the service's name>, and the route answers that service's. Required when APIURL returns a URL;
	// without it such reads fail with CodeInternal.
	APIDigestsPath func(region, resource string) (string, error)
	// Secret is the validator's service secret: reads through the API send
	// "Authorization: Bearer svc:validator:<Secret>".
	Secret string
	// HTTPClient makes the reads through the API; nil means a client with
	// DefaultValidationTimeout keeping up to 64 idle connections per API.
	HTTPClient *http.Client
	// Keys verifies every contract reply (WithKeys, signing.go): the
	// orchestrator's SecretKeys of the deployment's contract secret. nil
	// accepts unsigned replies (development).
	Keys Keys
}

// Directory is the orchestrator's contract.Directory over the NATS contract:
// any worker reaches any service in any region (DESIGN.md "Services and the
// contract"). Its endpoints export to and import from PagesStream
// (Client.ExportToStream, Client.ImportFromStream), so pages never travel
// through the orchestrator. A Directory is safe for concurrent use by any
// goroutine; it keeps one Client per (region, service) it was asked for.
type Directory struct {
	nc          *nats.Conn
	js          jetstream.JetStream
	servicesFor func(kind string) []string
	opts        DirectoryOptions

	mu struct {
		sync.Mutex
		clients map[string]*Client // by "<region>/<service>"
	}
}

var _ contract.Directory = (*Directory)(nil)

// validationConns is how many idle connections to each API the default
// validation client keeps.
const validationConns = 64

// NewDirectory returns a Directory over nc and js. servicesFor maps a
// resource kind to the services that own records of it (chat.ServicesFor);
// a kind it maps to nothing, or any kind when it is nil, has no endpoints.
// It does no I/O.
func NewDirectory(nc *nats.Conn, js jetstream.JetStream, servicesFor func(kind string) []string, opts DirectoryOptions) *Directory {
	if opts.APIURL == nil {
		opts.APIURL = func() string { return "" }
	}
	if opts.HTTPClient == nil {
		// Validation reads every service of both regions at once for each
		// migration in Phase 3: keep a connection for each (the default
		// transport keeps two per host and dials the rest every time).
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = validationConns
		opts.HTTPClient = &http.Client{Timeout: DefaultValidationTimeout, Transport: t}
	}
	d := &Directory{nc: nc, js: js, servicesFor: servicesFor, opts: opts}
	d.mu.clients = map[string]*Client{}
	return d
}

// Endpoints implements contract.Directory: one endpoint per service that
// owns resources of kind, sorted by service name. It does no I/O: a region
// without servers shows up as CodeUnavailable on the endpoints' calls.
// Errors: a CodeNotFound *contract.Error when no service owns resources of
// kind.
func (d *Directory) Endpoints(ctx context.Context, region, kind string) ([]contract.Endpoint, error) {
	var names []string
	if d.servicesFor != nil {
		names = slices.Clone(d.servicesFor(kind))
	}
	if len(names) == 0 {
		return nil, contract.Errorf(contract.CodeNotFound, "no services own resources of kind %q", kind)
	}
	slices.Sort(names)
	out := make([]contract.Endpoint, 0, len(names))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, svc := range names {
		key := region + "/" + svc
		c, ok := d.mu.clients[key]
		if !ok {
			c = Dial(d.nc, d.js, region, svc, WithKeys(d.opts.Keys))
			d.mu.clients[key] = c
		}
		out = append(out, &dirEndpoint{c: c, dir: d})
	}
	return out, nil
}

// dirEndpoint adapts a Client to contract.Endpoint.
type dirEndpoint struct {
	c   *Client
	dir *Directory
}

var _ contract.Endpoint = (*dirEndpoint)(nil)

func (e *dirEndpoint) Service() string { return e.c.Service() }
func (e *dirEndpoint) Region() string  { return e.c.Region() }

func (e *dirEndpoint) Export(ctx context.Context, migrationID string, req contract.ExportRequest) (contract.PageInfo, error) {
	ref, err := e.c.ExportToStream(ctx, migrationID, req)
	if err != nil {
		return contract.PageInfo{}, err
	}
	return e.pageInfo(req, ref), nil
}

// pageInfo is what the orchestrator needs of an export reply.
func (e *dirEndpoint) pageInfo(req contract.ExportRequest, ref PageRef) contract.PageInfo {
	return contract.PageInfo{Service: e.c.Service(), Mode: req.Mode, SyncToken: ref.SyncToken, Cursor: req.Cursor,
		Next: ref.Next, More: ref.More, Count: ref.Count, Dependents: ref.Dependents, Seq: ref.Seq, Page: ref.Page,
		Resource: req.Resource}
}

func (e *dirEndpoint) Authorize(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	return e.c.Authorize(ctx, resource, a)
}

func (e *dirEndpoint) Import(ctx context.Context, migrationID string, p contract.PageInfo) (contract.ImportResult, error) {
	return e.c.Import(ctx, migrationID, p)
}

// Digests reads through the contract, or through the user-facing API when
// the directory has one (paper 001 §5.3: validate through the path users
// take); that path carries no authority, the contract's does.
func (e *dirEndpoint) Digests(ctx context.Context, resource string, a contract.Authority) ([]contract.SliceDigest, error) {
	base := strings.TrimRight(e.dir.opts.APIURL(), "/")
	if base == "" {
		return e.c.Digests(ctx, resource, a)
	}
	return e.dir.apiDigests(ctx, base, e.c.Region(), e.c.Service(), resource)
}

func (e *dirEndpoint) Cleanup(ctx context.Context, resource string, a contract.Authority) (int, error) {
	return e.c.Cleanup(ctx, resource, a)
}

var _ contract.Repairer = (*dirEndpoint)(nil)

// Repair implements contract.Repairer (`cutover fence clear`, sent by the
// orchestrator only).
func (e *dirEndpoint) Repair(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	return e.c.Repair(ctx, resource, a)
}

// apiDigests reads one service's slice digests of resource at region
// through the user-facing API's region-pinned validation route, with the
// validator's service identity.
func (d *Directory) apiDigests(ctx context.Context, base, region, service, resource string) ([]contract.SliceDigest, error) {
	if d.opts.APIDigestsPath == nil {
		return nil, contract.Errorf(contract.CodeInternal, "validation read %s: no APIDigestsPath configured", region)
	}
	path, err := d.opts.APIDigestsPath(region, resource)
	if err != nil {
		return nil, contract.AsError(err)
	}
	// Only this service's digests (the route's "service" parameter):
	// validation reads each service on its own, and the route computes
	// every service's without it (4 for a conversation, 3 of them unread).
	u, err := url.Parse(base + path)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInvalid, "validation read %s: %v", region, err)
	}
	q := u.Query()
	q.Set("service", service)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInvalid, "validation read %s: %v", region, err)
	}
	req.Header.Set("Authorization", "Bearer svc:validator:"+d.opts.Secret)
	resp, err := d.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, contract.Errorf(contract.CodeUnavailable, "validation read %s: %v", region, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxValidationBody))
	if resp.StatusCode != http.StatusOK {
		return nil, contract.Errorf(contract.CodeUnavailable, "validation read %s: HTTP %d: %s", region, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var out struct {
		Services map[string][]struct {
			Slice int64  `json:"slice"`
			Count uint64 `json:"count"`
			Hash  string `json:"hash"`
		} `json:"services"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, contract.Errorf(contract.CodeInternal, "validation read %s: %v", region, err)
	}
	list, ok := out.Services[service]
	if !ok {
		// Never read "absent" as "empty": a vacuous comparison would pass.
		return nil, contract.Errorf(contract.CodeInternal, "validation read %s: service %q not reported", region, service)
	}
	var ds []contract.SliceDigest
	for _, s := range list {
		h, err := hex.DecodeString(s.Hash)
		if err != nil || len(h) != 16 {
			return nil, contract.Errorf(contract.CodeInternal, "validation read %s: bad hash %q", region, s.Hash)
		}
		var sd contract.SliceDigest
		sd.Slice, sd.Count = s.Slice, s.Count
		copy(sd.Hash[:], h)
		ds = append(ds, sd)
	}
	return ds, nil
}
