package contract

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// admitTable is testdata/admit.txt, the admission table.
//
//go:embed testdata/admit.txt
var admitTable string

// AdmitCase is one row of the admission table (testdata/admit.txt), with
// the Untils resolved against the now AdmitCases was given.
type AdmitCase struct {
	// Line is the row's line in the file; Text the row itself.
	Line int
	Text string
	// Record is the authority held before the request; Op the operation;
	// Stamp the request's authority.
	Record Authority
	Op     Op
	Stamp  Authority
	// Verdict is the expected verdict; RetryAfter a Locked verdict's
	// Retry-After; Keep the authority held afterwards.
	Verdict    Verdict
	RetryAfter time.Duration
	Keep       Authority
}

// AdmitCases returns the admission table's rows with their Untils resolved
// against now (an Until of "+10s" is now plus ten seconds). Every
// participant is checked against these rows: Admit's own test, the Pebble
// store's and the conformance kit's. Errors: a malformed row (a bug in the
// table).
func AdmitCases(now time.Time) ([]AdmitCase, error) {
	var out []AdmitCase
	for i, line := range strings.Split(admitTable, "\n") {
		text := strings.TrimSpace(line)
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		c, err := parseAdmitRow(text, now)
		if err != nil {
			return nil, fmt.Errorf("contract: admit.txt line %d %q: %w", i+1, text, err)
		}
		c.Line, c.Text = i+1, text
		out = append(out, c)
	}
	return out, nil
}

func parseAdmitRow(text string, now time.Time) (AdmitCase, error) {
	f := strings.Fields(text)
	if len(f) < 4 {
		return AdmitCase{}, fmt.Errorf("want record, op, stamp and verdict")
	}
	var c AdmitCase
	var err error
	if c.Record, err = ParseAuthority(f[0], now); err != nil {
		return c, err
	}
	c.Op = Op(f[1])
	if !knownOp(c.Op) {
		return c, fmt.Errorf("operation %q", f[1])
	}
	if c.Stamp, err = ParseAuthority(f[2], now); err != nil {
		return c, err
	}
	c.Verdict = Verdict(f[3])
	switch c.Verdict {
	case Allow, Tombstone, Moved, Locked, Refused, Invalid:
	default:
		return c, fmt.Errorf("verdict %q", f[3])
	}
	c.Keep = c.Record
	for _, opt := range f[4:] {
		k, v, ok := strings.Cut(opt, "=")
		switch {
		case ok && k == "retry":
			if c.RetryAfter, err = time.ParseDuration(v); err != nil {
				return c, err
			}
		case ok && k == "keep":
			if c.Keep, err = ParseAuthority(v, now); err != nil {
				return c, err
			}
		default:
			return c, fmt.Errorf("option %q", opt)
		}
	}
	return c, nil
}

func knownOp(op Op) bool {
	for _, o := range Ops {
		if o == op {
			return true
		}
	}
	return false
}

// ParseAuthority parses an authority written as in the admission table:
// "-" (none), "role@rev", "tombstone@rev" (a primary deleting as
// tombstones), each optionally followed by "+D" or "-D", an Until of now
// plus or minus the duration D. The result is not validated (the table
// holds malformed stamps on purpose). Errors: a malformed text.
func ParseAuthority(s string, now time.Time) (Authority, error) {
	if s == "-" {
		return Authority{}, nil
	}
	name, rest, ok := strings.Cut(s, "@")
	if !ok {
		return Authority{}, fmt.Errorf("authority %q: want role@rev", s)
	}
	var a Authority
	switch Role(name) {
	case RolePrimary, RoleExporting, RoleImporting, RoleSecondary:
		a.Role = Role(name)
	default:
		if name != "tombstone" {
			return Authority{}, fmt.Errorf("authority %q: role %q", s, name)
		}
		a.Role, a.Deletes = RolePrimary, DeletesTombstone
	}
	revText, until := rest, ""
	if i := strings.IndexAny(rest, "+-"); i >= 0 {
		revText, until = rest[:i], rest[i:]
	}
	rev, err := strconv.ParseUint(revText, 10, 64)
	if err != nil {
		return Authority{}, fmt.Errorf("authority %q: revision: %w", s, err)
	}
	a.Rev = rev
	if until != "" {
		d, err := time.ParseDuration(until[1:])
		if err != nil {
			return Authority{}, fmt.Errorf("authority %q: until: %w", s, err)
		}
		if until[0] == '-' {
			d = -d
		}
		a.Until = UntilOf(now.Add(d))
	}
	return a, nil
}
