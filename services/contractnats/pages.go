package contractnats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/services/contract"
)

// Stream and publish defaults.
const (
	// PagesMaxAge is how long PagesStream keeps a page: long enough for any
	// migration's import to finish or roll back, short enough that exported
	// content does not linger (paper 001 §4.3 strips content promptly).
	PagesMaxAge = 24 * time.Hour
	// PagesDuplicateWindow is PagesStream's Nats-Msg-Id deduplication window:
	// a retried export within it lands on the stored page.
	PagesDuplicateWindow = 10 * time.Minute
	// DefaultPublishAttempts is how often a page publish is tried when its
	// outcome is unknown (timeout, no responders).
	DefaultPublishAttempts = 3
	// DefaultPublishAttemptTimeout bounds one publish attempt.
	DefaultPublishAttemptTimeout = 5 * time.Second
	// DefaultTimeout is applied to I/O in this package when the caller's
	// context has no deadline.
	DefaultTimeout = 10 * time.Second
)

// withDefaultTimeout returns ctx bounded by d when it has no deadline.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// PagesConfig returns the configuration of PagesStream with replicas
// replicas (0 means 1): file storage, limits retention, PagesMaxAge,
// PagesDuplicateWindow. A page must be read from the stream leader, which
// holds every acknowledged page: on a replicated stream direct gets stay
// off (a follower could answer, and lag); on a stream of one replica its
// only server is the leader, so direct gets are on there, and an import
// reads its page as the raw message, not through the JSON API, which
// base64-encodes the page on the server and decodes it on the client
// (15% more records/s in `cutover bench copy --postgres`, where that
// read is on the copy's critical path).
func PagesConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        PagesStream,
		Description: "cutover export pages (services/contractnats)",
		Subjects:    []string{PagesSubjectPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Replicas:    max(1, replicas),
		MaxAge:      PagesMaxAge,
		Duplicates:  PagesDuplicateWindow,
		AllowDirect: max(1, replicas) == 1,
	}
}

// ProvisionPages creates PagesStream, or updates it to PagesConfig(replicas);
// calling it again is harmless. Use 3 replicas on a cluster (DESIGN.md
// "Durability and hazards"). It returns ErrInvalidOptions for a replica
// count outside 0..5 and the wrapped JetStream error otherwise, and applies
// DefaultTimeout when ctx has no deadline. Safe for concurrent use.
func ProvisionPages(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.Stream, error) {
	if replicas < 0 || replicas > 5 {
		return nil, fmt.Errorf("%w: %d replicas", ErrInvalidOptions, replicas)
	}
	ctx, cancel := withDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()
	s, err := js.CreateOrUpdateStream(ctx, PagesConfig(replicas))
	if err != nil {
		return nil, fmt.Errorf("contractnats: provision %s: %w", PagesStream, err)
	}
	return s, nil
}

// publisher publishes pages with the retry policy of a server.
type publisher struct {
	js             jetstream.JetStream
	attempts       int
	attemptTimeout time.Duration
	// stream returns the PagesStream handle, to read a deduplicated page
	// back.
	stream func(context.Context) (jetstream.Stream, error)
	// key signs every page published, and a deduplicated page read back
	// must verify with it (ServeOptions.Key; nil: none).
	key []byte
}

// PublishPage publishes page to PagesStream on PageSubject(migrationID,
// page.Service) with its MsgID and returns its PageRef. A publish whose
// outcome is unknown is retried with the same id, up to
// DefaultPublishAttempts times; if the stream already held the id, the
// returned PageRef describes the stored page (Duplicate set). Errors are
// *contract.Error: CodeInvalid (bad migration id or service name),
// CodeTooLarge (page above the server's max payload), CodeUnavailable
// (nobody acknowledged in time; retrying is safe), CodeInternal. It applies
// DefaultTimeout when ctx has no deadline. Safe for concurrent use.
func PublishPage(ctx context.Context, js jetstream.JetStream, migrationID string, page contract.Page) (PageRef, error) {
	p := publisher{
		js: js, attempts: DefaultPublishAttempts, attemptTimeout: DefaultPublishAttemptTimeout,
		stream: func(ctx context.Context) (jetstream.Stream, error) { return js.Stream(ctx, PagesStream) },
	}
	ctx, cancel := withDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()
	return p.publish(ctx, migrationID, page)
}

// publish implements PublishPage.
func (p publisher) publish(ctx context.Context, migrationID string, page contract.Page) (PageRef, error) {
	if err := ValidateMigrationID(migrationID); err != nil {
		return PageRef{}, invalid("%v", err)
	}
	if err := ValidateService(page.Service); err != nil {
		return PageRef{}, invalid("%v", err)
	}
	data, err := encode(&page)
	if err != nil {
		return PageRef{}, err
	}
	subject := PageSubject(migrationID, page.Service)
	id := MsgID(migrationID, page.Service, page.Mode, page.Attempt, page.SyncToken, page.Cursor)
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	if p.key != nil {
		msg.Header.Set(HeaderSignature, signature(p.key, pageKind, subject, id, "", data))
	}
	var ack *jetstream.PubAck
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, p.attemptTimeout)
		ack, err = p.js.PublishMsg(actx, msg, jetstream.WithMsgID(id), jetstream.WithExpectStream(PagesStream))
		cancel()
		if err == nil {
			break
		}
		// An unknown outcome: the page may be stored. Retrying with the same
		// id is safe, the stream drops a duplicate (DESIGN.md "Durability
		// and hazards").
		unknown := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
			errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
		if !unknown || attempt >= p.attempts || ctx.Err() != nil {
			return PageRef{}, fromNATS("publish page "+id, err)
		}
		select {
		case <-ctx.Done():
			return PageRef{}, fromNATS("publish page "+id, ctx.Err())
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		}
	}
	if !ack.Duplicate {
		return refOf(&page, ack.Sequence, false), nil
	}
	// The stream kept an earlier export of this position. Its records may
	// differ from ours (a delta page exported again after more writes), and
	// the importer will read the stored one, so the reply must describe it:
	// answering with our Next could skip records the stored page lacks.
	stream, err := p.stream(ctx)
	if err != nil {
		return PageRef{}, fromNATS("stream "+PagesStream, err)
	}
	stored, err := fetchPage(ctx, stream, migrationID, page.Service, ack.Sequence, p.key)
	if err != nil {
		return PageRef{}, err
	}
	return refOf(&stored, ack.Sequence, true), nil
}

// FetchPage reads the page of service in migration migrationID stored at
// seq in PagesStream (a non-direct get, answered by the stream leader).
// Errors are *contract.Error: CodeInvalid (bad names, seq 0, the message at
// seq belongs to another migration or service, or is not a page),
// CodeNotFound (no message at seq: never published, or aged out after
// PagesMaxAge), CodeUnavailable, CodeInternal. It applies DefaultTimeout
// when ctx has no deadline. Safe for concurrent use.
func FetchPage(ctx context.Context, js jetstream.JetStream, migrationID, service string, seq uint64) (contract.Page, error) {
	ctx, cancel := withDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()
	if err := ValidateMigrationID(migrationID); err != nil {
		return contract.Page{}, invalid("%v", err)
	}
	if err := ValidateService(service); err != nil {
		return contract.Page{}, invalid("%v", err)
	}
	stream, err := js.Stream(ctx, PagesStream)
	if err != nil {
		return contract.Page{}, fromNATS("stream "+PagesStream, err)
	}
	return fetchPage(ctx, stream, migrationID, service, seq, nil)
}

// fetchPage reads the page of service at seq of PagesStream, checking it is
// on the migration's page subject and names the service. With key, the
// message must carry the page signature of that key (a page this region
// published): a page planted by anyone else under the same
// Nats-Msg-Id is refused with CodeInternal.
func fetchPage(ctx context.Context, stream jetstream.Stream, migrationID, service string, seq uint64, key []byte) (contract.Page, error) {
	if seq == 0 {
		return contract.Page{}, invalid("page sequence 0")
	}
	m, err := stream.GetMsg(ctx, seq)
	if err != nil {
		return contract.Page{}, fromNATS(fmt.Sprintf("get page %d", seq), err)
	}
	if want := PageSubject(migrationID, service); m.Subject != want {
		return contract.Page{}, invalid("message %d of %s is on %q, not %q", seq, PagesStream, m.Subject, want)
	}
	if key != nil {
		sig, id := m.Header.Get(HeaderSignature), m.Header.Get(jetstream.MsgIDHeader)
		if sig == "" || !verifySignature(key, sig, pageKind, m.Subject, id, "", m.Data) {
			return contract.Page{}, contract.Errorf(contract.CodeInternal,
				"page %d of %s (%s) is not signed by this region's key: refused (planted under its Nats-Msg-Id by someone else)", seq, PagesStream, id)
		}
	}
	var page contract.Page
	if err := decode(m.Data, &page); err != nil {
		return contract.Page{}, invalid("page %d: %v", seq, err)
	}
	if page.Service != service {
		return contract.Page{}, invalid("page %d names service %q, not %q", seq, page.Service, service)
	}
	return page, nil
}
