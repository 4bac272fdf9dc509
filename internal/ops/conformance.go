package ops

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/conformance"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/store"
)

// ConformanceRequest is `cutover conformance`: the conformance kit run over
// NATS against a live participant (any language) that serves the test
// harness (docs/participant.md "Test harness").
type ConformanceRequest struct {
	NATS    string
	Region  string
	Service string
	// Keys verify the participant's signed replies (the deployment's
	// contract secret, contractnats.SecretKeys); nil accepts unsigned
	// ones.
	Keys contractnats.Keys
	// Timeout bounds the whole run.
	Timeout time.Duration
	JSON    bool
}

// ConformanceCase is one case run with the participant in one role.
type ConformanceCase struct {
	// Role is the participant's role in the case: "source" (it is
	// exported from; the reference participant imports) or "target" (it
	// imports from the reference participant).
	Role string `json:"role"`
	conformance.Result
}

// ConformanceReport is the run's outcome (`--json`).
type ConformanceReport struct {
	Region  string `json:"region"`
	Service string `json:"service"`
	// ResourcePrefix names the run's own resources ("conv/conformance-
	// <random>-"); each case's are cleaned up at both participants when it
	// ends.
	ResourcePrefix string            `json:"resource_prefix"`
	Cases          []ConformanceCase `json:"cases"`
	Passed         int               `json:"passed"`
	Failed         int               `json:"failed"`
}

// Conformance runs every conformance case twice against the participant
// req names, once as the source of a copy and once as its target, the
// other side being an in-process reference participant (the Pebble store,
// in memory). It prints one line per case as it ends (or the report as
// JSON at the end) and returns an error when any case failed.
func Conformance(ctx context.Context, req ConformanceRequest, stdout io.Writer) (ConformanceReport, error) {
	if req.Region == "" || req.Service == "" {
		return ConformanceReport{}, fmt.Errorf("%w: --region and --service are required", ErrUsage)
	}
	if err := contractnats.ValidateService(req.Service); err != nil {
		return ConformanceReport{}, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if req.Timeout <= 0 {
		req.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	c, err := dial(ctx, req.NATS)
	if err != nil {
		return ConformanceReport{}, err
	}
	defer c.Close()
	var opts []contractnats.ClientOption
	if req.Keys != nil {
		opts = append(opts, contractnats.WithKeys(req.Keys))
	}
	client := contractnats.Dial(c.nc, c.js, req.Region, req.Service, opts...)
	user := client.Harness()
	// One call first: a participant that serves no harness (or no
	// contract) is one clear error, not 32 failed cases.
	if _, _, err := user.Read("conv/conformance-ping", "ping", contract.Authority{}); err != nil {
		return ConformanceReport{}, fmt.Errorf("participant %s/%s: the test harness does not answer (is it running in test mode?): %v", req.Region, req.Service, err)
	}
	rep := ConformanceReport{Region: req.Region, Service: req.Service,
		ResourcePrefix: "conv/conformance-" + strings.ToLower(rand.Text()[:10]) + "-"}
	remote := contractnats.RemoteParticipant(client, "conformance-"+strings.ToLower(rand.Text()[:10]))
	for _, role := range []string{"source", "target"} {
		factory := func(t conformance.T) conformance.Harness {
			st, err := store.Open(store.Options{FS: vfs.NewMem()})
			if err != nil {
				t.Fatalf("reference store: %v", err)
			}
			t.Cleanup(func() { _ = st.Close() })
			ref := services.NewStoreParticipant(req.Service, st, services.StoreParticipantOptions{})
			h := conformance.Harness{ResourcePrefix: rep.ResourcePrefix + role + "-", Teardown: true}
			if role == "source" {
				h.Source, h.SourceUser, h.Target, h.TargetUser = remote, user, ref, conformance.StoreUser(st)
			} else {
				h.Source, h.SourceUser, h.Target, h.TargetUser = ref, conformance.StoreUser(st), remote, user
			}
			return h
		}
		conformance.Check(ctx, factory, func(r conformance.Result) {
			cc := ConformanceCase{Role: role, Result: r}
			rep.Cases = append(rep.Cases, cc)
			if r.Pass {
				rep.Passed++
			} else {
				rep.Failed++
			}
			if !req.JSON {
				printCase(stdout, cc)
			}
		})
	}
	if req.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return rep, err
		}
	} else {
		fmt.Fprintf(stdout, "conformance %s/%s: %d passed, %d failed\n", req.Region, req.Service, rep.Passed, rep.Failed)
	}
	if rep.Failed > 0 {
		return rep, fmt.Errorf("%d of %d cases failed", rep.Failed, len(rep.Cases))
	}
	return rep, nil
}

// printCase prints one line: PASS or FAIL, the role and case, the time,
// and a failure's reason.
func printCase(w io.Writer, c ConformanceCase) {
	if c.Pass {
		fmt.Fprintf(w, "PASS %s/%s (%d ms)\n", c.Role, c.Case, c.Ms)
		return
	}
	fmt.Fprintf(w, "FAIL %s/%s (%d ms): %s\n", c.Role, c.Case, c.Ms, oneLineReason(c.Reason))
}

// oneLineReason keeps a reason on one line.
func oneLineReason(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
