package demo

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/system"
)

// TestOptionsRefused: options the demo cannot run are refused before
// anything starts, as system.ErrConfig (the command's usage error).
func TestOptionsRefused(t *testing.T) {
	good := Options{Conversations: 2, Cluster: 1, Clients: 1, Concurrency: 2, Seed: 1, BigSize: 20, Convergence: "fence"}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	for name, mod := range map[string]func(*Options){
		"no conversations": func(o *Options) { o.Conversations = 0 },
		"no clients":       func(o *Options) { o.Clients = 0 },
		"no concurrency":   func(o *Options) { o.Concurrency = 0 },
		"no big size":      func(o *Options) { o.BigSize = 0 },
		"cluster 2":        func(o *Options) { o.Cluster = 2 },
		"cluster 0":        func(o *Options) { o.Cluster = 0 },
		"raw clients":      func(o *Options) { o.RawClients = -1 },
		"convergence":      func(o *Options) { o.Convergence = "eventually" },
		"resolver ttl":     func(o *Options) { o.ResolverTTL = -time.Second },
	} {
		o := good
		mod(&o)
		if err := o.Validate(); !errors.Is(err, system.ErrConfig) {
			t.Errorf("%s: Validate = %v, want ErrConfig", name, err)
		}
		rep, err := Run(context.Background(), o, io.Discard, io.Discard)
		if !errors.Is(err, system.ErrConfig) || rep != nil {
			t.Errorf("%s: Run = %v, %v; want ErrConfig and no report", name, rep, err)
		}
	}
	for _, conv := range []string{"fence", "ttl", ""} {
		o := good
		o.Convergence = conv
		if err := o.Validate(); err != nil {
			t.Errorf("convergence %s: %v", conv, err)
		}
	}
}
