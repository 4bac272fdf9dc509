package contractnats

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// DefaultDiscoverWait is how long Discover collects answers when no
// DiscoverWait option is given. Every server answers $SRV.INFO; there is no
// "last answer" marker, so discovery waits a fixed window.
const DefaultDiscoverWait = 500 * time.Millisecond

// Endpoint is one contract service in one region, as Discover reports it.
type Endpoint struct {
	// Region and Service name the contract (Dial takes them).
	Region  string
	Service string
	// Subject is the endpoints' subject prefix,
	// "cutover.contract.<region>.<service>".
	Subject string
	// Versions are the distinct micro service versions answering, sorted.
	Versions []string
	// Instances is how many servers (micro service instances) answered;
	// they share requests through a queue group.
	Instances int
}

// DiscoverOption configures Discover.
type DiscoverOption func(*discoverOptions) error

type discoverOptions struct {
	wait time.Duration
}

// DiscoverWait sets how long Discover collects answers; it must be
// positive. The context's deadline, when earlier, ends the wait sooner.
func DiscoverWait(d time.Duration) DiscoverOption {
	return func(o *discoverOptions) error {
		if d <= 0 {
			return fmt.Errorf("%w: discover wait %s", ErrInvalidOptions, d)
		}
		o.wait = d
		return nil
	}
}

// Discover lists the contract services registered on nc's NATS system, one
// Endpoint per (region, service), sorted by region then service, by asking
// micro's $SRV.INFO.<ServiceName> and collecting the answers for
// DefaultDiscoverWait (or DiscoverWait, or until ctx is done). The
// orchestrator uses it to learn every service of a resource at the source
// (paper 001 (A1): every service implements the contract). Answers without
// region or service metadata are skipped. It returns ErrInvalidOptions for
// a bad option and the wrapped NATS error if the request cannot be sent;
// finding nothing is an empty list, not an error. Safe for concurrent use.
func Discover(ctx context.Context, nc *nats.Conn, opts ...DiscoverOption) ([]Endpoint, error) {
	o := discoverOptions{wait: DefaultDiscoverWait}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	subject, err := micro.ControlSubject(micro.InfoVerb, ServiceName, "")
	if err != nil {
		return nil, fmt.Errorf("contractnats: discover: %w", err)
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("contractnats: discover: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, fmt.Errorf("contractnats: discover: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, o.wait)
	defer cancel()

	type key struct{ region, service string }
	found := map[key]*Endpoint{}
	for {
		m, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				break
			}
			return nil, fmt.Errorf("contractnats: discover: %w", err)
		}
		var info micro.Info
		if json.Unmarshal(m.Data, &info) != nil || info.Name != ServiceName {
			continue
		}
		region, service := info.Metadata[MetadataRegion], info.Metadata[MetadataService]
		if validateRegion(region) != nil || ValidateService(service) != nil {
			continue
		}
		k := key{region, service}
		e := found[k]
		if e == nil {
			e = &Endpoint{Region: region, Service: service, Subject: groupSubject(region, service)}
			found[k] = e
		}
		e.Instances++
		if !slices.Contains(e.Versions, info.Version) {
			e.Versions = append(e.Versions, info.Version)
			slices.Sort(e.Versions)
		}
	}
	out := make([]Endpoint, 0, len(found))
	for _, e := range found {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Endpoint) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.Service, b.Service))
	})
	return out, nil
}
