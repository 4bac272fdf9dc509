package participant

import (
	"slices"

	"github.com/cutover/cutover/services/contract"
)

// Page rules every participant applies the same way, whatever its store
// (the kit, and services.StoreParticipant over the Pebble store).

// Dependents lists, sorted and once each, the resources the live records
// of a page reference (paper 001 §5.1: they migrate as child migrations):
// discover's answer for each record, or its Refs when discover is nil.
func Dependents(recs []contract.Record, discover func(contract.Record) []string) []string {
	var deps []string
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		refs := r.Refs
		if discover != nil {
			refs = discover(r)
		}
		deps = append(deps, refs...)
	}
	slices.Sort(deps)
	return slices.Compact(deps)
}

// FitPage keeps a page's records under maxBytes of encoded record data
// (always at least one record, so a page moves on): it returns the records
// kept and whether it cut any; the rest follows in the next page.
func FitPage(recs []contract.Record, maxBytes int) ([]contract.Record, bool) {
	size := 0
	for i, r := range recs {
		size += len(r.Data) + len(r.ID) + len(r.Kind) + 64
		for _, ref := range r.Refs {
			size += len(ref) + 2
		}
		if size > maxBytes && i > 0 {
			return recs[:i], true
		}
	}
	return recs, false
}

// PageRecords returns the records req imports into service, refusing
// (CodeInvalid) a page of another service or resource and one of more
// than MaxPageRecords records.
func PageRecords(service string, req contract.ImportRequest) ([]contract.Record, error) {
	pg := req.Page
	if pg == nil {
		return nil, nil
	}
	switch {
	case pg.Service != "" && pg.Service != service:
		return nil, contract.Errorf(contract.CodeInvalid, "page of service %q imported into %q", pg.Service, service)
	case pg.Resource != "" && pg.Resource != req.Resource:
		return nil, contract.Errorf(contract.CodeInvalid, "page of %q in an import of %q", pg.Resource, req.Resource)
	case len(pg.Records) > MaxPageRecords:
		return nil, contract.Errorf(contract.CodeInvalid, "page of %d records above %d", len(pg.Records), MaxPageRecords)
	}
	return pg.Records, nil
}
