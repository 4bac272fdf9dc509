package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cutover/cutover/services/contractnats"
)

// checkServed refuses a target region in which no contract service
// answers, before anything is sent. The orchestrator
// refuses such a start too, per resource kind, but only after recording
// the migration; this gives the command line its error at once. When
// discovery finds no contract service at all, or fails, it cannot tell and
// the orchestrator decides.
func checkServed(ctx context.Context, o *conn, region string) error {
	eps, err := contractnats.Discover(ctx, o.nc)
	if err != nil || len(eps) == 0 {
		return nil
	}
	var served []string
	for _, ep := range eps {
		if ep.Region == region {
			return nil
		}
		if !slices.Contains(served, ep.Region) {
			served = append(served, ep.Region)
		}
	}
	return fmt.Errorf("region %q is not served: no contract service answers there (served: %s)", region, strings.Join(served, ", "))
}
