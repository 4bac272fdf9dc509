package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/chat"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsDirectory is the orchestrator's Directory over the NATS contract: any
// worker reaches any service in any region (DESIGN.md "Services and the
// contract"). Validation digests are read through the user-facing HTTP API
// when apiURL is set (paper 001 §5.3: validate through the path users take),
// else through the contract.
type natsDirectory struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	apiURL  func() string
	secret  string
	http    *http.Client
	mu      sync.Mutex
	clients map[string]*contractnats.Client
}

var _ orchestrator.Directory = (*natsDirectory)(nil)

// newNATSDirectory: apiURL returns the API's base URL ("" = validate
// through the contract); it is a function because the API may start after
// the directory is built.
func newNATSDirectory(nc *nats.Conn, js jetstream.JetStream, apiURL func() string, secret string) *natsDirectory {
	if apiURL == nil {
		apiURL = func() string { return "" }
	}
	return &natsDirectory{nc: nc, js: js, apiURL: apiURL, secret: secret,
		http: &http.Client{Timeout: 5 * time.Second}, clients: map[string]*contractnats.Client{}}
}

// servicesFor maps a resource kind to the services owning its records.
func servicesFor(kind string) []string {
	switch kind {
	case chat.KindConversation:
		return []string{"conversations", "messages", "reactions", "readstate"}
	case chat.KindMedia:
		return []string{"media"}
	}
	return nil
}

// Endpoints implements orchestrator.Directory.
func (d *natsDirectory) Endpoints(ctx context.Context, region, kind string) ([]orchestrator.Endpoint, error) {
	names := servicesFor(kind)
	if len(names) == 0 {
		return nil, fmt.Errorf("no services own resources of kind %q", kind)
	}
	out := make([]orchestrator.Endpoint, 0, len(names))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, svc := range names {
		key := region + "/" + svc
		c, ok := d.clients[key]
		if !ok {
			c = contractnats.Dial(d.nc, d.js, region, svc)
			d.clients[key] = c
		}
		out = append(out, &natsEndpoint2{c: c, dir: d, kind: kind})
	}
	return out, nil
}

// natsEndpoint2 adapts a contractnats.Client to orchestrator.Endpoint.
type natsEndpoint2 struct {
	c    *contractnats.Client
	dir  *natsDirectory
	kind string
}

func (e *natsEndpoint2) Service() string { return e.c.Service() }
func (e *natsEndpoint2) Region() string  { return e.c.Region() }

func (e *natsEndpoint2) Export(ctx context.Context, migrationID string, req contract.ExportRequest) (orchestrator.PageInfo, error) {
	ref, err := e.c.ExportToStream(ctx, migrationID, req)
	if err != nil {
		return orchestrator.PageInfo{}, err
	}
	return orchestrator.PageInfo{Service: e.c.Service(), Mode: req.Mode, SyncToken: ref.SyncToken, Cursor: req.Cursor,
		Next: ref.Next, More: ref.More, Count: ref.Count, Dependents: ref.Dependents, Seq: ref.Seq}, nil
}

func (e *natsEndpoint2) Import(ctx context.Context, migrationID string, p orchestrator.PageInfo) (contract.ImportResult, error) {
	if p.Seq == 0 {
		return contract.ImportResult{}, contract.Errorf(contract.CodeInvalid, "page without a stream sequence")
	}
	return e.c.ImportFromStream(ctx, migrationID, p.Seq)
}

func (e *natsEndpoint2) Digests(ctx context.Context, resource string) ([]contract.SliceDigest, error) {
	base := strings.TrimRight(e.dir.apiURL(), "/")
	if base == "" {
		return e.c.Digests(ctx, resource)
	}
	return e.dir.apiDigests(ctx, base, e.c.Region(), e.c.Service(), resource)
}

func (e *natsEndpoint2) SetFence(ctx context.Context, resource string, f contract.Fence) error {
	return e.c.SetFence(ctx, resource, f)
}

func (e *natsEndpoint2) ClearFence(ctx context.Context, resource, token string) error {
	return e.c.ClearFence(ctx, resource, token)
}

func (e *natsEndpoint2) Cleanup(ctx context.Context, resource string) (int, error) {
	return e.c.Cleanup(ctx, resource)
}

// apiDigests reads one service's slice digests of resource at region
// through the user-facing API's region-pinned validation route, with the
// validator's service identity.
func (d *natsDirectory) apiDigests(ctx context.Context, base, region, service, resource string) ([]contract.SliceDigest, error) {
	kind, id, ok := strings.Cut(resource, "/")
	if !ok {
		return nil, contract.Errorf(contract.CodeInvalid, "resource %q", resource)
	}
	path := "conversations"
	if kind == chat.KindMedia {
		path = "media"
	}
	u := fmt.Sprintf("%s/v1/internal/regions/%s/%s/%s/digests", base, url.PathEscape(region), path, url.PathEscape(id))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer svc:validator:"+d.secret)
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, contract.Errorf(contract.CodeUnavailable, "validation read %s: %v", region, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
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
		var d contract.SliceDigest
		d.Slice, d.Count = s.Slice, s.Count
		copy(d.Hash[:], h)
		ds = append(ds, d)
	}
	return ds, nil
}
