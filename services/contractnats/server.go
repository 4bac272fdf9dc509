package contractnats

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// HeaderTimeout is the request header in which a Client sends how long it
// will wait, in milliseconds, so the server gives up no later than its
// caller.
const HeaderTimeout = "Cutover-Timeout-Ms"

// HeaderDeadline is the request header in which a Client sends its
// absolute deadline (unix milliseconds, by the caller's clock). A request
// that reaches its handler more than DeadlineSkewMargin after it (held in a
// reconnect buffer and sent long after the caller gave up) is dropped
// unexecuted with CodeUnavailable. The caller's relative budget
// (HeaderTimeout), counted from the request's arrival by the server's own
// monotonic clock, is what ends a request queued behind the server's
// slots: no clock comparison between regions, so a region whose clock is
// ahead or behind by seconds still executes its requests. Neither is what
// keeps a late request safe — its authority's revision is (contract.Join:
// an attempt that ended was followed by a newer revision) — they spare
// work for callers that have gone.
const HeaderDeadline = "Cutover-Deadline-Ms"

// DeadlineSkewMargin is how far past a request's HeaderDeadline, by this
// server's clock, it is still executed: clocks between regions may differ
// by this much (well above the routing lock's skew margin) without a
// region refusing every request.
const DeadlineSkewMargin = 5 * time.Second

// maxHandlerTimeout caps a timeout asked for by a request header.
const maxHandlerTimeout = 10 * time.Minute

// replyHeaderSlack is kept free of the max payload for reply headers.
const replyHeaderSlack = 512

// Server serves one Participant's contract over NATS (see the package doc).
// Its methods are safe for concurrent use.
//
// Requests are handled by up to MaxConcurrent handler goroutines, kept
// between requests (handler, worker); several Servers of one (region,
// service) share the load through micro's queue group.
type Server struct {
	p        contract.Participant
	region   string
	service  string
	opts     ServeOptions
	pub      publisher
	maxReply int
	svc      micro.Service
	nc       *nats.Conn
	js       jetstream.JetStream

	// base is the parent of every handler's context; Stop cancels it after
	// the requests in flight have finished.
	base       context.Context
	cancelBase context.CancelFunc
	stopWatch  func() bool

	mu struct {
		sync.Mutex
		stopped bool
		pages   jetstream.Stream // cached PagesStream handle
	}
	inflight sync.WaitGroup
	stopOnce sync.Once
	// slots bounds the handlers running at once (MaxConcurrent); work
	// hands a request to an idle handler goroutine (worker).
	slots chan struct{}
	work  chan job

	// ckpt serialises the read-modify-write of an import checkpoint, one
	// stripe per hash of its name. It is held across the Checkpoints I/O on
	// purpose: the checkpoint only moves up, and two imports finishing
	// together must not both read the old value and let the lower one win.
	// Striped so that imports of different migrations do not wait for each
	// other's commits. It guards nothing else.
	ckpt [ckptStripes]sync.Mutex
}

const ckptStripes = 64

// Serve registers p's contract for region as a micro service named
// ServiceName (metadata region and service) with the endpoints of the
// package doc under "cutover.contract.<region>.<p.Service()>.", and serves
// until Stop is called or ctx is done. js is used to publish and read pages
// of PagesStream, which must exist (ProvisionPages) before the first export.
//
// It returns ErrInvalidName for a bad region or service name,
// ErrInvalidOptions for bad opts, and the wrapped micro error when the
// service cannot be registered.
func Serve(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, region string, p contract.Participant, opts ServeOptions) (*Server, error) {
	if nc == nil || js == nil || p == nil {
		return nil, fmt.Errorf("%w: nil connection, JetStream or participant", ErrInvalidOptions)
	}
	if err := validateRegion(region); err != nil {
		return nil, err
	}
	service := p.Service()
	if err := ValidateService(service); err != nil {
		return nil, err
	}
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Checkpoints == nil {
		opts.Checkpoints = MemoryCheckpoints()
		if sp, ok := p.(interface{ Store() *store.Store }); ok && sp.Store() != nil {
			opts.Checkpoints = StoreCheckpoints(sp.Store())
		}
	}
	if err := checkEpoch(opts.Checkpoints, region, service, opts.RoutingEpoch); err != nil {
		return nil, err
	}
	s := &Server{p: p, region: region, service: service, opts: opts, nc: nc, js: js, slots: make(chan struct{}, opts.MaxConcurrent), work: make(chan job)}
	s.maxReply = opts.MaxReplyBytes
	if s.maxReply == 0 {
		s.maxReply = max(int(nc.MaxPayload())-replyHeaderSlack, 1024)
	}
	s.pub = publisher{js: js, attempts: opts.PublishAttempts, attemptTimeout: opts.PublishAttemptTimeout, stream: s.pagesStream, key: opts.Key}
	s.base, s.cancelBase = context.WithCancel(context.WithoutCancel(ctx))

	svc, err := micro.AddService(nc, micro.Config{
		Name:        ServiceName,
		Version:     Version,
		Description: opts.Description,
		Metadata:    map[string]string{MetadataRegion: region, MetadataService: service},
	})
	if err != nil {
		s.cancelBase()
		return nil, fmt.Errorf("contractnats: register %s/%s: %w", region, service, err)
	}
	s.svc = svc
	g := svc.AddGroup(groupSubject(region, service))
	eps := []endpoint{
		{OpAuthority, s.authorize},
		{OpExport, s.export},
		{OpImport, s.importPage},
		{OpDigests, s.digests},
		{OpSlice, s.readSlice},
		{OpCleanup, s.cleanup},
		{OpRepair, s.repair},
		{OpCheckpoint, s.checkpoint},
	}
	if opts.Harness != nil {
		eps = append(eps, s.harnessEndpoints(opts.Harness)...)
	}
	for _, ep := range eps {
		if err := g.AddEndpoint(ep.op, s.handler(ep.h)); err != nil {
			_ = svc.Stop()
			s.cancelBase()
			return nil, fmt.Errorf("contractnats: endpoint %s: %w", ep.op, err)
		}
	}
	// One round trip: the server has every endpoint's subscription when
	// Serve returns, so a caller on another connection reaches it at once.
	fctx, cancel := withDefaultTimeout(ctx, DefaultTimeout)
	err = nc.FlushWithContext(fctx)
	cancel()
	if err != nil {
		_ = svc.Stop()
		s.cancelBase()
		return nil, fmt.Errorf("contractnats: registering the endpoints: %w", err)
	}
	s.stopWatch = context.AfterFunc(ctx, func() { _ = s.Stop() })
	return s, nil
}

// Region returns the region the server serves.
func (s *Server) Region() string { return s.region }

// Service returns the service name the server serves.
func (s *Server) Service() string { return s.service }

// Stop unregisters the service, waits for the requests in flight to finish
// (each is bounded by its timeout) and releases the server. Requests that
// arrive meanwhile are answered with CodeUnavailable. Calling it again
// returns nil. It returns micro's error if the subscriptions could not be
// drained.
func (s *Server) Stop() error {
	var err error
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.mu.stopped = true
		s.mu.Unlock()
		if s.stopWatch != nil {
			s.stopWatch()
		}
		err = s.svc.Stop()
		s.inflight.Wait()
		s.cancelBase()
	})
	return err
}

// enter marks a request in flight; false once the server is stopping.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.stopped {
		return false
	}
	s.inflight.Add(1)
	return true
}

// pagesStream returns the cached PagesStream handle, looking it up once.
func (s *Server) pagesStream(ctx context.Context) (jetstream.Stream, error) {
	s.mu.Lock()
	st := s.mu.pages
	s.mu.Unlock()
	if st != nil {
		return st, nil
	}
	st, err := s.js.Stream(ctx, PagesStream)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.mu.pages = st
	s.mu.Unlock()
	return st, nil
}

// endpoint is one operation's handler.
type endpoint struct {
	op string
	h  handlerFunc
}

// handlerFunc handles one decoded request body and returns the value to
// send back (nil: an empty reply).
type handlerFunc func(ctx context.Context, body []byte) (any, error)

// handler adapts h to micro: deadline, panic containment, error replies.
//
// nats.go calls a subscription's handler one message at a time, so the
// handler hands the request to a goroutine (at most MaxConcurrent at once):
// otherwise every export of one service would wait for the previous one's
// synced page publish, and every import for the previous one's Pebble
// commit (the throughput profile showed 570 orchestrator calls queued
// behind 4 running handlers). The goroutine answers on the request's reply
// subject itself, never through the micro.Request: micro reads the
// request's outcome when the callback returns, which would race. (micro's
// endpoint stats therefore count requests but not their errors or time.)
func (s *Server) handler(h handlerFunc) micro.Handler {
	return micro.HandlerFunc(func(req micro.Request) {
		r := inbound{subject: req.Subject(), nonce: req.Headers().Get(HeaderNonce), reply: req.Reply(), data: req.Data(),
			timeout: s.timeoutOf(req.Headers()), deadline: deadlineOf(req.Headers()), arrived: time.Now()}
		if !s.enter() {
			s.replyError(r, contract.Errorf(contract.CodeUnavailable, "contract %s/%s is stopping", s.region, s.service))
			return
		}
		s.slots <- struct{}{} // a full server stops reading: back-pressure
		j := job{r: r, h: h}
		select {
		case s.work <- j: // an idle handler goroutine takes it
		default:
			go s.worker(j)
		}
	})
}

// job is one request for a handler goroutine.
type job struct {
	r inbound
	h handlerFunc
}

// handlerIdle is how long a handler goroutine waits for another request
// before it exits.
const handlerIdle = 10 * time.Second

// worker serves j, then the requests handed to it while it waits, until it
// has waited handlerIdle or the server stops. Reusing the goroutines keeps
// their grown stacks: a goroutine per request grew its stack from scratch
// on every request (Pebble reads and msgpack decoding run deep), and that
// copying was 6.5 % of the CPU of `cutover bench throughput`.
func (s *Server) worker(j job) {
	idle := time.NewTimer(handlerIdle)
	defer idle.Stop()
	for {
		s.serve(j.r, j.h)
		<-s.slots
		s.inflight.Done()
		idle.Reset(handlerIdle)
		select {
		case j = <-s.work:
		case <-idle.C:
			return
		case <-s.base.Done():
			return
		}
	}
}

// checkEpoch records epoch in cp the first time, and refuses another one
// than recorded (ErrRoutingEpoch, saying what happened and what to do).
func checkEpoch(cp Checkpoints, region, service, epoch string) error {
	if epoch == "" {
		return nil
	}
	was, err := cp.Get(epochCheckpoint)
	if err != nil {
		return fmt.Errorf("contract %s/%s: reading the routing epoch it served under: %w", region, service, err)
	}
	switch {
	case len(was) == 0:
		return cp.Put(epochCheckpoint, []byte(epoch))
	case string(was) == epoch:
		return nil
	}
	return fmt.Errorf("%w: contract %s/%s: this store served routing epoch %s, the ROUTING bucket now has epoch %s. "+
		"The ROUTING stream was deleted and created again, so routing revisions restarted from 1, and this store's "+
		"authority records hold revisions of the old stream: it would refuse requests as stale, or take a new revision "+
		"for an old one. Restore the old ROUTING stream (a restored stream keeps its epoch in its metadata, %q), "+
		"or serve this region from empty stores",
		ErrRoutingEpoch, region, service, was, epoch, "cutover.epoch")
}

// inbound is what a handler goroutine needs of a request: its subject and
// nonce sign the reply (signing.go).
type inbound struct {
	subject  string
	nonce    string
	reply    string
	data     []byte
	timeout  time.Duration
	deadline time.Time // zero: none sent
	// arrived is when the server read the request (time.Now, monotonic):
	// the caller's budget counts from it.
	arrived time.Time
}

// serve handles one request and sends its reply.
func (s *Server) serve(r inbound, h handlerFunc) {
	budget := r.arrived.Add(r.timeout)
	if waited := time.Since(r.arrived); !time.Now().Before(budget) {
		s.replyError(r, contract.Errorf(contract.CodeUnavailable,
			"contract %s/%s: request waited %s for a handler, past its caller's %s, not executed", s.region, s.service, waited.Round(time.Millisecond), r.timeout))
		return
	}
	if now := s.opts.Clock(); !r.deadline.IsZero() && !now.Before(r.deadline.Add(DeadlineSkewMargin)) {
		s.replyError(r, contract.Errorf(contract.CodeUnavailable,
			"contract %s/%s: request %s past its caller's deadline by this server's clock (more than the %s skew margin), not executed",
			s.region, s.service, now.Sub(r.deadline).Round(time.Millisecond), DeadlineSkewMargin))
		return
	}
	ctx, cancel := context.WithDeadline(s.base, budget)
	defer cancel()
	v, err := call(ctx, h, r.data)
	if err != nil {
		s.replyError(r, s.toError(err))
		return
	}
	var body []byte
	if v != nil {
		if body, err = encode(v); err != nil {
			s.replyError(r, s.toError(err))
			return
		}
	}
	if len(body) > s.maxReply {
		s.replyError(r, contract.Errorf(contract.CodeTooLarge, "reply of %d bytes above %d", len(body), s.maxReply))
		return
	}
	s.send(r, nil, body)
}

// send publishes a reply to r, signed with the region's key when the
// server has one. A lost reply is the caller's timeout, and every operation
// is safe to retry.
func (s *Server) send(r inbound, hdr nats.Header, body []byte) {
	if r.reply == "" {
		return // a publish without a reply subject: nobody is waiting
	}
	hdr = signReply(s.opts.Key, r.subject, r.nonce, hdr, body)
	_ = s.nc.PublishMsg(&nats.Msg{Subject: r.reply, Header: hdr, Data: body})
}

// call runs h, turning a panic into CodeInternal: a bug in one request must
// not take the service down.
func call(ctx context.Context, h handlerFunc, body []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, contract.Errorf(contract.CodeInternal, "panic: %v", r)
		}
	}()
	return h(ctx, body)
}

// timeoutOf is the caller's timeout from HeaderTimeout, or HandlerTimeout.
func (s *Server) timeoutOf(hdr micro.Headers) time.Duration {
	if v := hdr.Get(HeaderTimeout); v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			return min(time.Duration(ms)*time.Millisecond, maxHandlerTimeout)
		}
	}
	return s.opts.HandlerTimeout
}

// deadlineOf is the caller's absolute deadline from HeaderDeadline; zero
// when absent or malformed (an older client: its relative timeout holds).
func deadlineOf(hdr micro.Headers) time.Time {
	if v := hdr.Get(HeaderDeadline); v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			return time.UnixMilli(ms)
		}
	}
	return time.Time{}
}

// toError translates a handler error; a context ended by Stop is
// CodeUnavailable (retry elsewhere), not internal.
func (s *Server) toError(err error) *contract.Error {
	if errors.Is(err, context.Canceled) {
		return contract.Errorf(contract.CodeUnavailable, "contract %s/%s: %v", s.region, s.service, err)
	}
	return services.ToError(err)
}

// replyError sends e as a micro error reply: the code and message in
// micro's headers, the whole *contract.Error as the msgpack body.
func (s *Server) replyError(r inbound, e *contract.Error) {
	body, err := encode(e)
	if err != nil {
		body = nil
	}
	desc := e.Message
	if desc == "" {
		desc = string(e.Code)
	}
	// A header value must stay on one line.
	desc = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, desc)
	if len(desc) > 256 {
		desc = desc[:256]
	}
	code := string(e.Code)
	if code == "" {
		code = string(contract.CodeInternal)
	}
	s.send(r, nats.Header{micro.ErrorHeader: []string{desc}, micro.ErrorCodeHeader: []string{code}}, body)
}

// export implements OpExport: Participant.Export, then publish the page to
// PagesStream and reply with its PageRef (paper 001 (A2), §5.1).
func (s *Server) export(ctx context.Context, body []byte) (any, error) {
	var r exportRequest
	if err := decode(body, &r); err != nil {
		return nil, invalid("export request: %v", err)
	}
	return s.exportPage(ctx, r)
}

// exportPage exports one page for r and publishes it, or returns it
// inline.
func (s *Server) exportPage(ctx context.Context, r exportRequest) (PageRef, error) {
	if err := ValidateMigrationID(r.Migration); err != nil {
		return PageRef{}, invalid("%v", err)
	}
	page, err := s.p.Export(ctx, r.Request)
	if err != nil {
		return PageRef{}, err
	}
	switch page.Service {
	case "":
		page.Service = s.service
	case s.service:
	default:
		return PageRef{}, contract.Errorf(contract.CodeInternal, "participant %q exported a page of service %q", s.service, page.Service)
	}
	page.Attempt = r.Request.Attempt
	if r.Request.Inline && len(page.Records) > 0 {
		// Asked for inline: the reply carries the page unless it is too
		// large for a message, then it is published as usual.
		if b, err := encode(&page); err == nil && len(b) <= min(InlinePageMax, s.maxReply/2) {
			ref := refOf(&page, 0, false)
			ref.Page = &page
			return ref, nil
		}
	}
	if len(page.Records) == 0 {
		// Nothing to import: no synced publish (see the package doc). A
		// retry that finds records later publishes them under the same
		// Msg-Id, and no earlier copy is stored to shadow it.
		return refOf(&page, 0, false), nil
	}
	return s.pub.publish(ctx, r.Migration, page)
}

// importPage implements OpImport: get the page at the sequence from
// PagesStream, apply it with Participant.Import (idempotent, paper 001 (A3)),
// then raise the checkpoint. A crash between the import and the checkpoint
// leaves the checkpoint behind, never ahead: the page is imported again,
// which converges.
func (s *Server) importPage(ctx context.Context, body []byte) (any, error) {
	var r importRequest
	if err := decode(body, &r); err != nil {
		return nil, invalid("import request: %v", err)
	}
	if err := ValidateMigrationID(r.Migration); err != nil {
		return nil, invalid("%v", err)
	}
	ir := contract.ImportRequest{Resource: r.Resource, Authority: r.Authority, Reset: r.Reset, Digests: r.Digests}
	switch {
	case r.Seq > 0 && r.Page != nil:
		return nil, invalid("import of a page both inline and at sequence %d", r.Seq)
	case r.Seq > 0:
		stream, err := s.pagesStream(ctx)
		if err != nil {
			return nil, fromNATS("stream "+PagesStream, err)
		}
		page, err := fetchPage(ctx, stream, r.Migration, s.service, r.Seq, nil)
		if err != nil {
			return nil, err
		}
		ir.Page = &page
	case r.Page != nil:
		if r.Page.Service != s.service {
			return nil, invalid("inline page names service %q, not %q", r.Page.Service, s.service)
		}
		ir.Page = r.Page
	}
	if ir.Resource == "" && ir.Page != nil {
		ir.Resource = ir.Page.Resource
	}
	res, err := s.p.Import(ctx, ir)
	if err != nil {
		return nil, err
	}
	if r.Seq > 0 {
		if err := s.advance(r.Migration, r.Seq); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// InlinePageMax is the largest encoded page an export returns inline
// (contract.ExportRequest.Inline); larger pages go to PagesStream. It is
// also bounded by half the connection's max payload, so that the import
// request carrying the page back fits.
const InlinePageMax = 256 << 10

// advance raises the checkpoint of migrationID to seq; it never lowers it,
// so pages imported out of order or again leave it at the highest applied.
func (s *Server) advance(migrationID string, seq uint64) error {
	name := checkpointName(migrationID, s.service)
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	mu := &s.ckpt[h.Sum32()%ckptStripes]
	mu.Lock()
	defer mu.Unlock()
	cur, err := s.readCheckpoint(name)
	if err != nil {
		return err
	}
	if seq <= cur {
		return nil
	}
	if err := s.opts.Checkpoints.Put(name, encodeCheckpoint(seq)); err != nil {
		return contract.Errorf(contract.CodeInternal, "checkpoint %q: %v", name, err)
	}
	return nil
}

func (s *Server) readCheckpoint(name string) (uint64, error) {
	v, err := s.opts.Checkpoints.Get(name)
	if err != nil {
		return 0, contract.Errorf(contract.CodeInternal, "checkpoint %q: %v", name, err)
	}
	seq, err := decodeCheckpoint(name, v)
	if err != nil {
		return 0, contract.Errorf(contract.CodeInternal, "%v", err)
	}
	return seq, nil
}

// checkpoint implements OpCheckpoint.
func (s *Server) checkpoint(ctx context.Context, body []byte) (any, error) {
	var r checkpointRequest
	if err := decode(body, &r); err != nil {
		return nil, invalid("checkpoint request: %v", err)
	}
	if err := ValidateMigrationID(r.Migration); err != nil {
		return nil, invalid("%v", err)
	}
	seq, err := s.readCheckpoint(checkpointName(r.Migration, s.service))
	if err != nil {
		return nil, err
	}
	return checkpointReply{Seq: seq}, nil
}

// authorize implements OpAuthority: the record held afterwards.
func (s *Server) authorize(ctx context.Context, body []byte) (any, error) {
	var r authorityRequest
	if err := decode(body, &r); err != nil {
		return nil, invalid("authority request: %v", err)
	}
	a, err := s.p.Authorize(ctx, r.Resource, r.Authority)
	if err != nil {
		return nil, err
	}
	return authorityReply{Authority: a}, nil
}

// digests implements OpDigests.
func (s *Server) digests(ctx context.Context, body []byte) (any, error) {
	var r authorityRequest
	if err := decode(body, &r); err != nil {
		return nil, invalid("digests request: %v", err)
	}
	d, err := s.p.Digests(ctx, r.Resource, r.Authority)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// readSlice implements OpSlice.
func (s *Server) readSlice(ctx context.Context, body []byte) (any, error) {
	var r sliceRequest
	if err := decode(body, &r); err != nil {
		return nil, invalid("slice request: %v", err)
	}
	recs, err := s.p.ReadSlice(ctx, r.Resource, r.From, r.To)
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// cleanup implements OpCleanup.
func (s *Server) cleanup(ctx context.Context, body []byte) (any, error) {
	var r authorityRequest
	if err := decode(body, &r); err != nil {
		return nil, invalid("cleanup request: %v", err)
	}
	n, err := s.p.Cleanup(ctx, r.Resource, r.Authority)
	if err != nil {
		return nil, err
	}
	return cleanupReply{Removed: n}, nil
}

// repair implements OpRepair: the participant's contract.Repairer, or
// CodeInternal when it has none; the reply names the record replaced.
func (s *Server) repair(ctx context.Context, body []byte) (any, error) {
	var r authorityRequest
	if err := decode(body, &r); err != nil {
		return nil, invalid("repair request: %v", err)
	}
	rp, ok := s.p.(contract.Repairer)
	if !ok {
		return nil, contract.Errorf(contract.CodeInternal, "%s at %s cannot repair an authority record", s.service, s.region)
	}
	prev, err := rp.Repair(ctx, r.Resource, r.Authority)
	if err != nil {
		return nil, err
	}
	return authorityReply{Authority: prev}, nil
}
