package routingbench

import (
	"context"
	"testing"
)

// TestRunSmall runs the suite at a tiny size and checks the outcomes that do
// not depend on the machine: zero store reads per unlocked operation, one
// per baseline and per locked operation, and reads in the mixed runs
// proportional to the locked fraction. Times are measured, never asserted.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server and sleeps past lock not-before times")
	}
	res, err := Run(context.Background(), Options{Ops: 400, Resources: 100, Fractions: []float64{0.1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Embedded.StoreReadsPerOp != 0 {
		t.Errorf("embedded reads/op %v, want 0", res.Embedded.StoreReadsPerOp)
	}
	if res.Baseline.StoreReadsPerOp != 1 {
		t.Errorf("baseline reads/op %v, want 1", res.Baseline.StoreReadsPerOp)
	}
	if res.Locked.StoreReadsPerOp < 1 {
		t.Errorf("locked reads/op %v, want >= 1", res.Locked.StoreReadsPerOp)
	}
	if len(res.Mixed) != 1 || res.Mixed[0].Ours.StoreReadsPerOp <= 0 || res.Mixed[0].Ours.StoreReadsPerOp >= 0.5 {
		t.Errorf("mixed f=0.1: %+v", res.Mixed)
	}
}
