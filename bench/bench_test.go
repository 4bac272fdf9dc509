package bench

import (
	"context"
	"errors"
	"testing"
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
		name            string
		preLock, phase2 bool
	}{
		{"", false, false},
		{FencingProtocol, false, false},
		{FencingDeleteBlocking, false, false},
		{FencingStopAndCopy, false, true},
		{FencingReadOnly, true, true},
	} {
		p, err := FencePolicy(tc.name)
		if err != nil {
			t.Fatalf("%q: %v", tc.name, err)
		}
		if p.WriteFenceAtPreLock() != tc.preLock || p.WriteFenceInPhase2() != tc.phase2 {
			t.Errorf("%q: write fence at the pre-lock %v, in Phase 2 %v", tc.name, p.WriteFenceAtPreLock(), p.WriteFenceInPhase2())
		}
	}
	if _, err := FencePolicy("optimistic"); !errors.Is(err, ErrUnknownStrategy) {
		t.Fatalf("unknown strategy: %v", err)
	}
}
