package pgstore

// ByKeySQL is the statements TestPlansUseTheKeys explains, with the index
// each must use.
var ByKeySQL = []struct{ Name, SQL, Index string }{
	{"get", sqlGet, "cutover_records_pkey"},
	{"prefetch", sqlPrefetch, "cutover_records_pkey"},
	{"delete", sqlDelete, "cutover_records_pkey"},
	{"changes", sqlChanges, "cutover_records_seq"},
}

// PresumedWrong is how many transactions ran again because a record
// presumed absent was stored.
func (s *Store) PresumedWrong() uint64 { return s.presumedWrong.Load() }
