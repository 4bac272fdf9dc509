package system

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/oklog/run"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
)

// Actors are the long-running components of one process: orchestrator
// workers, the projector, the metrics feed, HTTP servers, tombstone sweeps.
// Providers add them while the object graph is built; App runs them all in
// one oklog/run group, so the first to fail (or to stop on its own) stops
// the others and the process, with its error (STYLE.md "Wiring"). Safe for
// concurrent use.
type Actors struct {
	mu   sync.Mutex
	list []actor
}

type actor struct {
	name string
	run  func(context.Context) error
	stop func()
}

// Add registers a component: run blocks until ctx ends (returning nil) or
// the component fails; stop, if not nil, makes run return.
func (a *Actors) Add(name string, runFn func(ctx context.Context) error, stop func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, actor{name: name, run: runFn, stop: stop})
}

// serveHTTP registers srv serving on an already open listener's Serve
// function; Shutdown stops it.
func (a *Actors) serveHTTP(name string, srv *http.Server, serve func() error) {
	a.Add(name, func(context.Context) error {
		if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
}

// App is one process's object graph (fx) plus its actors.
type App struct {
	fx     *fx.App
	actors *Actors

	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// NewApp builds the graph of opts with a fresh *Actors supplied to it.
func NewApp(opts ...fx.Option) *App {
	a := &App{actors: &Actors{}}
	a.fx = fx.New(append(opts, fx.Supply(a.actors), fx.WithLogger(func() fxevent.Logger { return fxevent.NopLogger }))...)
	return a
}

// Err reports an error building the graph.
func (a *App) Err() error { return a.fx.Err() }

// Run starts the app, calls ready, and runs the actors until ctx ends or
// one of them fails; then it stops everything. It returns the first
// actor's error (nil when ctx ended), joined with any stop error. This is
// a role's whole life: a failed component ends the process non-zero.
func (a *App) Run(ctx context.Context, ready func()) error {
	if err := a.Start(ctx); err != nil {
		return err
	}
	ready()
	select {
	case <-ctx.Done():
	case <-a.done:
	}
	return a.Stop()
}

// Start starts the graph (with a one-minute bound) and the actors in the
// background. Errors: the first start hook's.
func (a *App) Start(ctx context.Context) error {
	if err := a.fx.Err(); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := a.fx.Start(sctx); err != nil {
		return err
	}
	rctx, stop := context.WithCancel(context.Background())
	a.cancel, a.done = stop, make(chan struct{})
	var g run.Group
	g.Add(func() error { <-rctx.Done(); return nil }, func(error) { stop() })
	a.actors.mu.Lock()
	list := append([]actor(nil), a.actors.list...)
	a.actors.mu.Unlock()
	for _, ac := range list {
		g.Add(func() error {
			err := ac.run(rctx)
			if err == nil && rctx.Err() == nil {
				err = errors.New("stopped on its own")
			}
			if err != nil && rctx.Err() == nil {
				return fmt.Errorf("%s: %w", ac.name, err)
			}
			return nil
		}, func(error) {
			stop()
			if ac.stop != nil {
				ac.stop()
			}
		})
	}
	go func() {
		a.err = g.Run()
		close(a.done)
	}()
	return nil
}

// Done is closed when the actors have stopped (an actor failed, or Stop).
func (a *App) Done() <-chan struct{} { return a.done }

// Stop stops the actors, then the graph (each with a bound), and returns
// the first actor failure joined with any stop error.
func (a *App) Stop() error {
	if a.cancel == nil {
		return nil
	}
	a.cancel()
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		return errors.New("system: actors did not stop within 30s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return errors.Join(a.err, a.fx.Stop(ctx))
}
