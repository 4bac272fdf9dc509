package system

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
)

// The object graphs of the all-in-one system and of every role resolve.
func TestValidateApps(t *testing.T) {
	cfg := &Config{InMemory: true}
	if err := cfg.EnsureDefaults(); err != nil {
		t.Fatal(err)
	}
	ep := &Endpoint{URL: "nats://127.0.0.1:4222"}
	actors := fx.Supply(&Actors{})
	for name, opts := range map[string]fx.Option{
		"service":      ServiceRole(cfg, ep),
		"orchestrator": OrchestratorRole(cfg, ep, ""),
		"projector":    ProjectorRole(cfg, ep, ""),
		"gateway":      GatewayRole(cfg, ep),
		"all-in-one":   fx.Options(Core(cfg), API(), Orchestration(), Projection(), Metrics(true)),
	} {
		if err := fx.ValidateApp(opts, actors, fx.NopLogger); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestConfigRefusesBadRegion(t *testing.T) {
	cfg := Config{Regions: []string{"US East"}}
	if err := cfg.EnsureDefaults(); !errors.Is(err, ErrConfig) {
		t.Fatalf("got %v, want ErrConfig", err)
	}
	if _, err := Start(context.Background(), cfg); !errors.Is(err, ErrConfig) {
		t.Fatalf("Start: got %v, want ErrConfig", err)
	}
}

// An actor that fails stops every other actor and App.Run returns its
// error; an actor that returns nil on its own is a failure too.
func TestAppRunStopsOnFirstFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"error", errors.New("consumer gone"), "broken: consumer gone"},
		{"nil", nil, "broken: stopped on its own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stopped := make(chan struct{})
			app := NewApp(fx.Invoke(func(a *Actors) {
				a.Add("healthy", func(ctx context.Context) error { <-ctx.Done(); close(stopped); return nil }, nil)
				a.Add("broken", func(ctx context.Context) error {
					select {
					case <-time.After(10 * time.Millisecond):
					case <-ctx.Done():
					}
					return tc.err
				}, nil)
			}))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := app.Run(ctx, func() {})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want %q", err, tc.want)
			}
			select {
			case <-stopped:
			default:
				t.Fatal("the healthy actor was not stopped")
			}
		})
	}
}

// A context that ends stops the app cleanly: no error.
func TestAppRunCleanStop(t *testing.T) {
	app := NewApp(fx.Invoke(func(a *Actors) {
		a.Add("worker", func(ctx context.Context) error { <-ctx.Done(); return nil }, nil)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	err := app.Run(ctx, cancel)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
}
