package main

import (
	"context"
	"io"
	"time"

	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/services/contractnats"
)

func init() {
	register("conformance", "run the migration contract's conformance kit over NATS against a live participant (any language) in test mode", oneLine(runConformance))
}

func runConformance(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("conformance", "conformance --nats URL --region R --service S [--json] [--contract-secret-file F]\n\nRuns every case of the conformance kit (services/conformance) against the participant of service S\nin region R, twice: as the source of a copy and as its target, the other side an in-process reference\nparticipant. The participant must serve the test harness (docs/participant.md \"Test harness\"). One line\nper case with PASS or FAIL and the reason; exit status 1 if any case failed. The run uses resources of\nits own (conv/conformance-<random>-...) and cleans each up when its case ends.", stdout)
	url := natsFlag(fs)
	region := fs.String("region", "", "region of the participant (required)")
	service := fs.String("service", "", "service name of the participant (required)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	secret := addContractSecret(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, ""); err != nil {
		return err
	}
	if err := secret.check(); err != nil {
		return err
	}
	req := ops.ConformanceRequest{NATS: *url, Region: *region, Service: *service, Timeout: *timeout, JSON: *asJSON}
	if secret.given() {
		v, err := secret.value(contractnats.MinSecretLen)
		if err != nil {
			return err
		}
		req.Keys = contractnats.SecretKeys([]byte(v))
	}
	_, err = ops.Conformance(ctx, req, stdout)
	return err
}
