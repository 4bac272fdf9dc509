package testutil

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	c := NewClock()
	if got := c.Now(); !got.Equal(Start) {
		t.Fatalf("Now = %v, want %v", got, Start)
	}
	if c.Now() != c.Now() {
		t.Fatal("a plain clock moved by itself")
	}
	c.Advance(time.Minute)
	if got := c.Now(); !got.Equal(Start.Add(time.Minute)) {
		t.Fatalf("after Advance: %v", got)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c.Set(at)
	if got := c.Now(); !got.Equal(at) {
		t.Fatalf("after Set: %v", got)
	}
}

func TestTickingClock(t *testing.T) {
	c := NewTickingClock(time.Microsecond)
	const workers, reads = 4, 100
	var mu sync.Mutex
	seen := map[time.Time]bool{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range reads {
				now := c.Now()
				mu.Lock()
				if seen[now] {
					t.Errorf("reading %v twice", now)
				}
				seen[now] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), Start.Add((workers*reads+1)*time.Microsecond); !got.Equal(want) {
		t.Fatalf("after %d readings: %v, want %v", workers*reads, got, want)
	}
}

func TestWaitFor(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			time.Sleep(time.Millisecond)
			n.Add(1)
		}
	}()
	WaitFor(t, "three steps", func() bool { return n.Load() == 3 })
}
