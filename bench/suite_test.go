package bench

import (
	"context"
	"errors"
	"testing"
)

// Out-of-range options are refused with ErrOptions before anything starts.
func TestSuitesRefuseBadOptions(t *testing.T) {
	ctx := context.Background()
	for name, run := range map[string]func() error{
		"routing": func() error { _, err := Routing(ctx, RoutingOptions{Ops: 1, Resources: 9}); return err },
		"reads":   func() error { _, err := Reads(ctx, ReadsOptions{Conversations: 1, Mix: "huge"}); return err },
		"fence": func() error {
			_, err := Fence(ctx, FenceOptions{Conversations: 3, Big: 1, Clients: 1, Concurrency: 1, Strategies: FenceStrategies[1:]})
			return err
		},
		"throughput": func() error {
			_, err := Throughput(ctx, ThroughputOptions{Conversations: 3, Big: 1, Clients: 1, Concurrency: 1, Workers: 1, Fanout: "direct", Cluster: 3, LazyFsync: true})
			return err
		},
		"throughput runs": func() error {
			_, err := Throughput(ctx, ThroughputOptions{Conversations: 3, Big: 1, Clients: 1, Concurrency: 1, Workers: 1, Fanout: "direct", Cluster: 1, Runs: -1})
			return err
		},
		"copy":     func() error { _, err := Copy(ctx, CopyOptions{Conversations: 1, Messages: 1}); return err },
		"validate": func() error { _, err := RunValidate(ctx, ValidateOptions{Sizes: []int{0}}); return err },
	} {
		if err := run(); !errors.Is(err, ErrOptions) {
			t.Errorf("%s: got %v, want ErrOptions", name, err)
		}
	}
}
