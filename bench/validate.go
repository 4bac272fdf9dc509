package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/cutover/cutover/services/store"
)

// ValidateOptions configures the validate suite.
type ValidateOptions struct {
	// Sizes are the resource sizes in messages (default 4,000, 100,000 and
	// 1,000,000).
	Sizes []int
	// Batch is the Import batch size used to build the resources (default
	// 10,000).
	Batch int
	// Dir is where the temporary stores go ("" : the system temp dir).
	Dir string
	// Progress, if set, receives progress lines.
	Progress func(string)
}

// ValidateSize is one size's measurement.
type ValidateSize struct {
	Messages int `json:"messages"`
	Slices   int `json:"slices"`
	// DigestMs is this design: read the per-slice digests maintained at
	// write time at source and target and compare them (count + content
	// hash of every record, not a sample).
	DigestMs float64 `json:"digest_ms"`
	// ScanMs is the baseline: read every record at both sides and compare
	// the content field by field.
	ScanMs float64 `json:"scan_ms"`
	Ratio  float64 `json:"ratio"`
	Equal  bool    `json:"equal"`
	// Within5s: the digest comparison fits the 5 s validation budget.
	Within5s bool    `json:"within_budget"`
	BuildS   float64 `json:"build_s"`
}

// ValidateResult is the validate suite's output.
type ValidateResult struct {
	Suite      string         `json:"suite"`
	Durability string         `json:"durability"`
	Ours       map[string]any `json:"ours"`
	Baseline   map[string]any `json:"baseline"`
	Ratio      float64        `json:"ratio"`
	Target     string         `json:"target"`
	Met        bool           `json:"target_met"`
	Sizes      []ValidateSize `json:"sizes"`
	Notes      string         `json:"notes"`
}

// RunValidate builds a source and a target store holding the same resource
// at each size (store.Import in big batches, NoSync) and times the full
// comparison both ways. The digest side reads the stores directly, not
// through the contract (the contract adds one round trip per side).
func RunValidate(ctx context.Context, o ValidateOptions) (ValidateResult, error) {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{4000, 100_000, 1_000_000}
	}
	if o.Batch <= 0 {
		o.Batch = 10_000
	}
	for _, n := range o.Sizes {
		if n < 1 {
			return ValidateResult{}, fmt.Errorf("%w: size %d", ErrOptions, n)
		}
	}
	say := func(format string, a ...any) {
		if o.Progress != nil {
			o.Progress(fmt.Sprintf(format, a...))
		}
	}
	res := ValidateResult{Suite: "validate", Durability: PebbleNoSync + " for building the resources; validation only reads",
		Target: "full-content validation inside 5 s at 1,000,000 messages",
		Notes:  "digests are maintained at write time per time slice (services/store); the baseline reads and compares every record"}
	base, err := os.MkdirTemp(o.Dir, "cutover-bench-validate-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(base)
	nosync := false
	open := func(name string) (*store.Store, error) {
		return store.Open(store.Options{Dir: base + "/" + name, Sync: &nosync})
	}
	met := true
	for i, n := range o.Sizes {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		src, err := open(fmt.Sprintf("src%d", i))
		if err != nil {
			return res, err
		}
		tgt, err := open(fmt.Sprintf("tgt%d", i))
		if err != nil {
			_ = src.Close()
			return res, err
		}
		sz, err := validateOne(ctx, src, tgt, n, o.Batch, say)
		_ = src.Close()
		_ = tgt.Close()
		if err != nil {
			return res, err
		}
		res.Sizes = append(res.Sizes, sz)
		if !sz.Within5s || !sz.Equal {
			met = false
		}
	}
	last := res.Sizes[len(res.Sizes)-1]
	res.Ours = map[string]any{"messages": last.Messages, "validate_ms": last.DigestMs, "method": "per-slice digests, both sides, compared"}
	res.Baseline = map[string]any{"messages": last.Messages, "validate_ms": last.ScanMs, "method": "read and compare every record"}
	res.Ratio = Ratio(last.ScanMs, last.DigestMs)
	res.Met = met
	return res, nil
}

// WriteText writes each size's timings as a table.
func (r *ValidateResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "validate (%s): target %s: met=%v\n", r.Durability, r.Target, r.Met)
	for _, s := range r.Sizes {
		fmt.Fprintf(w, "  %9d messages: digests %9.1f ms | full scan %9.1f ms | %.0fx\n", s.Messages, s.DigestMs, s.ScanMs, s.Ratio)
	}
}

func validateOne(ctx context.Context, src, tgt *store.Store, n, batch int, say func(string, ...any)) (ValidateSize, error) {
	const resource = "conv/bench-validate"
	sz := ValidateSize{Messages: n}
	start := time.Now()
	// A month of history: slices of an hour (the store default).
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	span := int64(30 * 24 * time.Hour)
	recs := make([]store.Record, 0, batch)
	for lo := 0; lo < n; lo += batch {
		recs = recs[:0]
		for j := lo; j < min(n, lo+batch); j++ {
			at := t0 + span/int64(n)*int64(j)
			recs = append(recs, store.Record{ID: fmt.Sprintf("m%08d", j), Kind: "message", Version: 1, CreatedAt: at, UpdatedAt: at,
				Data: fmt.Appendf(nil, `{"author":"u%d","text":"benchmark message %d with some ordinary length of chat text"}`, j%50, j)})
		}
		if _, _, err := src.Import(resource, rawImport, false, recs); err != nil {
			return sz, err
		}
		if _, _, err := tgt.Import(resource, rawImport, false, recs); err != nil {
			return sz, err
		}
	}
	sz.BuildS = time.Since(start).Seconds()
	say("validate: built %d messages at source and target in %.1f s", n, sz.BuildS)
	if err := ctx.Err(); err != nil {
		return sz, err
	}

	// Ours: digests of both sides (in parallel, as the orchestrator does),
	// then compared.
	start = time.Now()
	var sd, td []store.SliceDigest
	var serr, terr error
	done := make(chan struct{})
	go func() { defer close(done); sd, serr = src.Digests(resource) }()
	td, terr = tgt.Digests(resource)
	<-done
	if serr != nil || terr != nil {
		return sz, fmt.Errorf("digests: source %v, target %v", serr, terr)
	}
	eq := slices.Equal(sd, td)
	sz.DigestMs = ms(time.Since(start))
	sz.Slices = len(sd)

	// Baseline: read every record at both sides and compare content.
	start = time.Now()
	scanEq, err := scanCompare(ctx, src, tgt, resource)
	if err != nil {
		return sz, err
	}
	sz.ScanMs = ms(time.Since(start))
	sz.Equal = eq && scanEq
	sz.Ratio = Ratio(sz.ScanMs, sz.DigestMs)
	sz.Within5s = sz.DigestMs <= 5000
	say("validate: %d messages: digests %.1f ms (%d slices), full scan %.1f ms", n, sz.DigestMs, sz.Slices, sz.ScanMs)
	return sz, nil
}

// scanCompare pages through both stores in (createdAt, id) order and
// compares every live record's content.
func scanCompare(ctx context.Context, src, tgt *store.Store, resource string) (bool, error) {
	var afterC int64
	afterID := ""
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		a, err := src.ListSlice(resource, 0, math.MaxInt64, afterC, afterID, store.MaxPageLimit)
		if err != nil {
			return false, err
		}
		b, err := tgt.ListSlice(resource, 0, math.MaxInt64, afterC, afterID, store.MaxPageLimit)
		if err != nil {
			return false, err
		}
		if len(a) != len(b) {
			return false, nil
		}
		for i := range a {
			x, y := &a[i], &b[i]
			if x.ID != y.ID || x.Kind != y.Kind || x.CreatedAt != y.CreatedAt || !bytes.Equal(x.Data, y.Data) || !slices.Equal(x.Refs, y.Refs) {
				return false, nil
			}
		}
		if len(a) < store.MaxPageLimit {
			return true, nil
		}
		afterC, afterID = a[len(a)-1].CreatedAt, a[len(a)-1].ID
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
