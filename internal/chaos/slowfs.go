package chaos

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/vfs"
)

// slowSync is the slow-fsync fault: a filesystem for the service stores
// whose fsyncs (Sync, SyncData, SyncTo) now and then take 5–50 ms longer,
// seeded, about one in twenty — a disk under load, which stretches every
// synced commit of a fence, an import or a user write while migrations and
// traffic go on. Writes and reads are untouched: durability is the same.
type slowSync struct {
	mu    sync.Mutex
	rng   *rand.Rand
	slows atomic.Int64
}

func newSlowSync(seed uint64) *slowSync {
	return &slowSync{rng: rand.New(rand.NewPCG(seed, 77))}
}

// delay is the extra time of one fsync (0 most of the time).
func (s *slowSync) delay() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rng.IntN(20) != 0 {
		return 0
	}
	return time.Duration(5+s.rng.IntN(46)) * time.Millisecond
}

func (s *slowSync) wait() {
	if d := s.delay(); d > 0 {
		s.slows.Add(1)
		time.Sleep(d)
	}
}

// Wrap is the system.Config.StoreFS of the fault.
func (s *slowSync) Wrap(fs vfs.FS) vfs.FS { return slowFS{FS: fs, s: s} }

type slowFS struct {
	vfs.FS
	s *slowSync
}

func (f slowFS) wrap(fl vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return slowFile{File: fl, s: f.s}, nil
}

func (f slowFS) Create(name string) (vfs.File, error) { return f.wrap(f.FS.Create(name)) }
func (f slowFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return f.wrap(f.FS.Open(name, opts...))
}
func (f slowFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	return f.wrap(f.FS.OpenReadWrite(name, opts...))
}
func (f slowFS) OpenDir(name string) (vfs.File, error) { return f.wrap(f.FS.OpenDir(name)) }
func (f slowFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	return f.wrap(f.FS.ReuseForWrite(oldname, newname))
}

type slowFile struct {
	vfs.File
	s *slowSync
}

func (f slowFile) Sync() error     { f.s.wait(); return f.File.Sync() }
func (f slowFile) SyncData() error { f.s.wait(); return f.File.SyncData() }
func (f slowFile) SyncTo(length int64) (bool, error) {
	f.s.wait()
	return f.File.SyncTo(length)
}
