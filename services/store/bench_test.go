package store

import (
	"fmt"
	"testing"
)

func benchOpen(b *testing.B, sync bool) *Store {
	b.Helper()
	s, err := Open(Options{Dir: b.TempDir(), Sync: &sync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkPut measures a new write of a 256-byte record on a real
// directory, with and without fsync per commit.
func BenchmarkPut(b *testing.B) {
	data := make([]byte, 256)
	for _, sync := range []bool{true, false} {
		b.Run(map[bool]string{true: "sync", false: "nosync"}[sync], func(b *testing.B) {
			s := benchOpen(b, sync)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			i := 0
			for b.Loop() {
				if _, err := s.Put(res, Record{ID: fmt.Sprintf("m%09d", i), Kind: "message", Data: data}, true); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkImportPage500 measures importing one export page of 500 new
// 256-byte records in one batch.
func BenchmarkImportPage500(b *testing.B) {
	data := make([]byte, 256)
	for _, sync := range []bool{true, false} {
		b.Run(map[bool]string{true: "sync", false: "nosync"}[sync], func(b *testing.B) {
			s := benchOpen(b, sync)
			page := make([]Record, 500)
			b.ReportAllocs()
			b.SetBytes(int64(len(page) * len(data)))
			n := 0
			for b.Loop() {
				for j := range page {
					page[j] = Record{ID: fmt.Sprintf("m%09d", n), Kind: "message", Version: 1,
						CreatedAt: int64(n) * 1e9, UpdatedAt: int64(n) * 1e9, Data: data}
					n++
				}
				applied, _, err := s.Import(res, importing(1), false, page)
				if err != nil || applied != len(page) {
					b.Fatal(applied, err)
				}
			}
		})
	}
}
