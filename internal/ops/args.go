package ops

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
)

// The checks of a request's arguments; each failure wraps ErrUsage.

// CheckRegion returns an error wrapping ErrUsage unless s, the value of
// the flag --flagName, is a region name (lower case, valid as a NATS
// subject token).
func CheckRegion(flagName, s string) error {
	if s == "" {
		return fmt.Errorf("%w: --%s is required", ErrUsage, flagName)
	}
	if err := cnats.ValidateRegion(s); err != nil || strings.ToLower(s) != s {
		return fmt.Errorf("%w: --%s %q is not a region name", ErrUsage, flagName, s)
	}
	return nil
}

// parseResource parses a "kind/id" argument.
func parseResource(s string) (kvrouting.Resource, error) {
	res, err := kvrouting.ParseResource(s)
	if err != nil {
		return res, usageOf(err)
	}
	return res, nil
}

// usageOf wraps err, the routing library's ErrInvalid for an argument, in
// ErrUsage, worded for the CLI's user ("invalid resource id: longer than
// 200 bytes") without the library's "kvrouting: " prefix.
func usageOf(err error) error {
	var ie *kvrouting.InvalidError
	if errors.As(err, &ie) {
		return fmt.Errorf("%w: invalid %s", ErrUsage, ie.Reason)
	}
	return fmt.Errorf("%w: %w", ErrUsage, err)
}

func parseMigrationID(s string) error {
	if !events.ValidID(s) {
		return fmt.Errorf("%w: %q is not a migration id", ErrUsage, s)
	}
	return nil
}

// SplitList splits a comma-separated list, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// tenantResources reads and validates the resource list.
func tenantResources(list, file string) ([]string, error) {
	if (list == "") == (file == "") {
		return nil, fmt.Errorf("%w: give exactly one of --resources and --resources-file", ErrUsage)
	}
	var raw []string
	where := func(i int) string { return fmt.Sprintf("resource %d", i+1) }
	if list != "" {
		raw = SplitList(list)
	} else {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUsage, err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		var lines []int
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			raw = append(raw, line)
			lines = append(lines, n)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		where = func(i int) string { return fmt.Sprintf("%s:%d", file, lines[i]) }
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: no resources", ErrUsage)
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(raw))
	for i, r := range raw {
		res, err := kvrouting.ParseResource(r)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrUsage, where(i), err)
		}
		if !seen[res.String()] {
			seen[res.String()] = true
			out = append(out, res.String())
		}
	}
	return out, nil
}
