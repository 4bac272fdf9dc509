package contractnats

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/cutover/cutover/services/contract"
)

var _ contract.RegionProber = (*Directory)(nil)

// probeMigration is the migration id a probe reads the checkpoint of: a
// read that no migration writes, so the answer is always 0.
const probeMigration = "region-probe"

// ProbeRegion implements contract.RegionProber: it sends every service
// owning resources of kind one read-only request (a checkpoint read) at
// region. A service with no server there is told by NATS at once ("no
// responders"); any answer, even an error, means a server is there.
// Errors: a CodeNotFound *contract.Error naming the kind, or the services
// with no server at region; CodeUnavailable (or the server's error) when
// it cannot tell, e.g. after DefaultTimeout without an answer. Safe for
// concurrent use.
func (d *Directory) ProbeRegion(ctx context.Context, region, kind string) error {
	if err := validateRegion(region); err != nil {
		return contract.Errorf(contract.CodeNotFound, "%v", err)
	}
	var names []string
	if d.servicesFor != nil {
		names = slices.Clone(d.servicesFor(kind))
	}
	if len(names) == 0 {
		return contract.Errorf(contract.CodeNotFound, "no services own resources of kind %q", kind)
	}
	slices.Sort(names)
	body, err := encode(&checkpointRequest{Migration: probeMigration})
	if err != nil {
		return err
	}
	ctx, cancel := withDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()
	var missing []string
	for _, svc := range names {
		subject := EndpointSubject(region, svc, OpCheckpoint)
		msg := nats.NewMsg(subject)
		msg.Data = body
		nonce := newNonce()
		msg.Header.Set(HeaderNonce, nonce)
		reply, err := d.nc.RequestMsgWithContext(ctx, msg)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			missing = append(missing, svc)
		case err != nil:
			return fromNATS("probe "+region+"/"+svc, err)
		default:
			// Only the region's own servers count as serving it.
			if err := checkReply(d.opts.Keys, region, subject, nonce, reply); err != nil {
				return err
			}
		}
	}
	if len(missing) > 0 {
		return contract.Errorf(contract.CodeNotFound, "no server of %s answers in region %q", strings.Join(missing, ", "), region)
	}
	return nil
}
