package store

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/services/contract"
	"io"
	stdlog "log"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDurableAcrossReopen writes records, a tombstone, a fence and a cursor
// to a real directory, closes and reopens, and finds all of it.
func TestDurableAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	clock := testutil.NewClock()
	open := func(mod ...func(*Options)) (*Store, error) {
		opts := Options{Dir: dir, Clock: clock.Now, TombstoneTTL: time.Hour}
		for _, m := range mod {
			m(&opts)
		}
		return Open(opts)
	}
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		MustPut(t, s, res, rec(name(i), "message", name(i)), true)
	}
	MustPut(t, s, res, rec(name(3), "message", "edited"), false)
	MustAuthorize(t, s, res, tombstoning(1, clock.Now().Add(6*time.Hour)))
	MustDelete(t, s, res, name(4))
	fenced := exporting(2, clock.Now().Add(5*time.Minute))
	MustAuthorize(t, s, res, fenced)
	if err := s.PutCursor("export/conv/abc", []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	token := MustToken(t, s, res)
	digests := MustDigests(t, s, res)
	changes := MustChanges(t, s, res, 0, 0, 100)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = open()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	assertEqual(t, "token", MustToken(t, s, res), token)
	assertEqual(t, "digests", MustDigests(t, s, res), digests)
	assertEqual(t, "changes", MustChanges(t, s, res, 0, 0, 100), changes)
	live, tomb := MustCount(t, s, res)
	assertEqual(t, "counts", [2]int{live, tomb}, [2]int{19, 1})
	if r, err := s.Get(res, name(3)); err != nil || string(r.Data) != "edited" {
		t.Fatalf("Get = %+v, %v", r, err)
	}
	if a, err := s.Authority(res); err != nil || a != fenced {
		t.Fatalf("authority after reopen %s, %v; want %s", a, err, fenced)
	}
	_, err = s.Put(res, rec("new", "message", ""), true)
	if e := contract.AsError(err); e.Lock != contract.LockWriteFence {
		t.Fatalf("write fence after reopen: %v", err)
	}
	if v, err := s.GetCursor("export/conv/abc"); err != nil || string(v) != "\x01\x02\x03" {
		t.Fatalf("cursor %v, %v", v, err)
	}
	// The expiry index survived too.
	clock.Advance(2 * time.Hour)
	if n, err := s.SweepTombstones(clock.Now()); err != nil || n != 1 {
		t.Fatalf("sweep after reopen = %d, %v", n, err)
	}
	// The sequence continues where it was.
	if _, err := s.Repair(res, role(3, contract.RolePrimary)); err != nil {
		t.Fatal(err)
	}
	assertEqual(t, "next seq", MustPut(t, s, res, rec("new", "message", ""), true).Seq, token+1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	t.Run("slice width is fixed at creation", func(t *testing.T) {
		_, err := open(func(o *Options) { o.SliceWidth = time.Minute })
		assertErrIs(t, "Open", err, ErrInvalid)
	})
	t.Run("bad options", func(t *testing.T) {
		_, err := Open(Options{})
		assertErrIs(t, "no Dir", err, ErrInvalid)
		_, err = Open(Options{Dir: dir, TombstoneTTL: -1})
		assertErrIs(t, "negative TTL", err, ErrInvalid)
		if errors.Is(err, ErrCorrupt) {
			t.Fatal("wrong class")
		}
	})
}

// Pebble's log lines go to the store's slog logger at debug level: opening,
// writing, closing and reopening a store (a WAL replay) prints nothing to
// stdout or stderr, and the lines reach the logger.
func TestPebbleLogsToSlog(t *testing.T) {
	dir := t.TempDir()
	var logged bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelDebug}))
	out := captureStdio(t, func() {
		for range 2 {
			s, err := Open(Options{Dir: dir, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			MustPut(t, s, res, rec(fmt.Sprint(time.Now().UnixNano()), "message", "x"), true)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if out != "" {
		t.Fatalf("the store wrote to stdout/stderr: %q", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "component=pebble") {
		t.Fatalf("no Pebble line reached the logger: %q", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// captureStdio runs fn with os.Stdout and os.Stderr (and the standard log)
// redirected, and returns what was written to them.
func captureStdio(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	oldOut, oldErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = w, w
	stdlog.SetOutput(w)
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() {
		os.Stdout, os.Stderr = oldOut, oldErr
		stdlog.SetOutput(os.Stderr)
	}()
	fn()
	_ = w.Close()
	return <-done
}
