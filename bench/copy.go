package bench

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/store"
	"github.com/nats-io/nats.go/jetstream"
)

// RawCopy is the floor a Phase 2 copy is measured against: the same records
// published page by page to the PAGES stream (JetStream, with the server's
// durability) and written page by page into a fresh Pebble store with fsync
// per batch (store.Import), sequentially, with no orchestration at all.
type RawCopy struct {
	Records       int     `json:"records"`
	Pages         int     `json:"pages"`
	PublishMs     float64 `json:"publish_ms"`
	PebbleMs      float64 `json:"pebble_ms"`
	RecordsPerSec float64 `json:"records_per_s"`
}

// rawImport is the authority the raw copy imports under: a target.
var rawImport = contract.Authority{Rev: 1, Role: contract.RoleImporting}

// MeasureRawCopy runs the raw copy of recs (one resource) in pages of
// pageLimit records; dir holds the scratch Pebble store (removed after).
func MeasureRawCopy(ctx context.Context, js jetstream.JetStream, resource string, recs []store.Record, pageLimit int, dir string) (RawCopy, error) {
	if pageLimit <= 0 {
		pageLimit = contract.DefaultPageLimit
	}
	out := RawCopy{Records: len(recs)}
	tmp, err := os.MkdirTemp(dir, "cutover-bench-rawcopy-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(tmp)
	st, err := store.Open(store.Options{Dir: tmp}) // Sync nil: fsync per commit
	if err != nil {
		return out, err
	}
	defer st.Close()
	mig := fmt.Sprintf("rawcopy-%d", time.Now().UnixNano())
	var pub, peb time.Duration
	for lo := 0; lo < len(recs); lo += pageLimit {
		hi := min(len(recs), lo+pageLimit)
		page := contract.Page{Service: "messages", Resource: resource, Mode: contract.Historical, SyncToken: 1,
			Cursor: uint64(lo), Next: uint64(hi), More: hi < len(recs), Records: recs[lo:hi]}
		t := time.Now()
		if _, err := contractnats.PublishPage(ctx, js, mig, page); err != nil {
			return out, fmt.Errorf("raw publish: %w", err)
		}
		pub += time.Since(t)
		t = time.Now()
		if _, _, err := st.Import(resource, rawImport, false, page.Records); err != nil {
			return out, fmt.Errorf("raw import: %w", err)
		}
		peb += time.Since(t)
		out.Pages++
	}
	out.PublishMs, out.PebbleMs = ms(pub), ms(peb)
	out.RecordsPerSec = Ratio(float64(len(recs)), (pub + peb).Seconds())
	return out, nil
}
