package pgstore_test

import (
	"fmt"
	"testing"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
)

// BenchmarkImportPage500 measures importing one historical export page of 500 new
// 256-byte records through the kit into PostgreSQL (the test server: fsync
// off, so this is the statements' and the kit's cost, not the disk's).
func BenchmarkImportPage500(b *testing.B) {
	p := participant.New("kit", openB(b), participant.Options{})
	data := make([]byte, 256)
	recs := make([]contract.Record, 500)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for j := range recs {
			recs[j] = contract.Record{ID: fmt.Sprintf("m%09d", n), Kind: "note", Version: 1,
				CreatedAt: int64(n) * 1e9, UpdatedAt: int64(n) * 1e9, Data: data}
			n++
		}
		r, err := p.Import(b.Context(), contract.ImportRequest{Resource: res, Authority: importing(5), Page: historical(recs...)})
		if err != nil || r.Applied != len(recs) {
			b.Fatal(r, err)
		}
	}
}

// BenchmarkPut measures one user write through the kit: a new 256-byte
// record under a primary's authority, one transaction (fsync off, as
// above: the statements' and round trips' cost).
func BenchmarkPut(b *testing.B) {
	p := participant.New("kit", openB(b), participant.Options{})
	primary := contract.Authority{Rev: 5, Role: contract.RolePrimary}
	if _, err := p.Authorize(b.Context(), res, primary); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 256)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		rec := contract.Record{ID: fmt.Sprintf("m%09d", n), Kind: "note", CreatedAt: int64(n) * 1e9, UpdatedAt: int64(n) * 1e9, Data: data}
		n++
		if _, err := p.Put(b.Context(), res, rec, true, primary); err != nil {
			b.Fatal(err)
		}
	}
}
