package main

import (
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/ops"
)

// Helpers roles.go still calls by their old names while it moves to
// internal/*; the operator commands' own copies live in internal/ops.

// parseRegion returns a usage error unless s, the value of --flagName, is a
// region name.
func parseRegion(flagName, s string) error { return ops.CheckRegion(flagName, s) }

// rfc formats a JSON timestamp: RFC 3339 in UTC, "" for the zero time.
func rfc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// figuresJSON is the figures' JSON shape, shared by the projector's read
// models and the operator commands.
type figuresJSON = ops.FiguresJSON

func toFiguresJSON(f *events.Figures) *figuresJSON { return ops.ToFiguresJSON(f) }
