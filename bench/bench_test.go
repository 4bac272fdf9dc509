package bench

import (
	"context"
	"errors"
	"testing"

	"github.com/cutover/cutover/services/contract"
)

func TestPercentiles(t *testing.T) {
	if p := Percentiles(nil); p.N != 0 || p.Max != 0 {
		t.Fatalf("empty: %+v", p)
	}
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(100 - i) // 100 .. 1, unsorted on purpose
	}
	p := Percentiles(v)
	if p.N != 100 || p.Max != 100 || p.P50 != 51 || p.P99 != 100 || p.Avg != 50.5 {
		t.Fatalf("got %+v", p)
	}
	if v[0] != 100 {
		t.Fatal("Percentiles sorted its input")
	}
	if Ratio(1, 0) != 0 || Ratio(6, 3) != 2 {
		t.Fatal("Ratio")
	}
}

func TestRunValidateSmall(t *testing.T) {
	res, err := RunValidate(context.Background(), ValidateOptions{Sizes: []int{50, 1500}, Batch: 400, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Suite != "validate" || res.Durability == "" || len(res.Sizes) != 2 {
		t.Fatalf("result %+v", res)
	}
	for _, s := range res.Sizes {
		if !s.Equal || s.Slices == 0 {
			t.Fatalf("size %d: %+v", s.Messages, s)
		}
	}
}

// TestFencePolicy: every strategy of the fence suite has its policy; the
// baselines write-fence before Phase 3, the protocol does not.
func TestFencePolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		preLock bool
		phase2  contract.FenceLevel
	}{
		{"", false, contract.FenceHardDelete},
		{FencingProtocol, false, contract.FenceHardDelete},
		{FencingDeleteBlocking, false, contract.FenceHardDelete},
		{FencingStopAndCopy, false, contract.FenceWrite},
		{FencingReadOnly, true, contract.FenceWrite},
	} {
		p, err := FencePolicy(tc.name)
		if err != nil {
			t.Fatalf("%q: %v", tc.name, err)
		}
		if p.WriteFenceAtPreLock() != tc.preLock || p.Phase2Fence() != tc.phase2 {
			t.Errorf("%q: write fence at the pre-lock %v, Phase 2 fence %s", tc.name, p.WriteFenceAtPreLock(), p.Phase2Fence())
		}
	}
	if _, err := FencePolicy("optimistic"); !errors.Is(err, ErrUnknownStrategy) {
		t.Fatalf("unknown strategy: %v", err)
	}
}
