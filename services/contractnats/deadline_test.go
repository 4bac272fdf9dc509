package contractnats_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/vmihailenco/msgpack/v5"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// TestRequestPastItsDeadlineIsNotExecuted: a request that reaches its
// handler more than the skew margin after the caller's absolute deadline
// (held in a reconnect buffer and sent long after the caller gave up) is
// dropped unexecuted: here an authority request, which must install
// nothing. One just past its deadline (a clock a little behind the
// caller's) is executed.
func TestRequestPastItsDeadlineIsNotExecuted(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	fence := contract.Authority{Rev: 5, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	send := func(res string, deadline time.Time) *nats.Msg {
		body, err := msgpack.Marshal(map[string]any{"res": res, "auth": fence})
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(contractnats.EndpointSubject("eu", "messages", contractnats.OpAuthority))
		m.Data = body
		m.Header.Set(contractnats.HeaderTimeout, "5000")
		m.Header.Set(contractnats.HeaderDeadline, strconv.FormatInt(deadline.UnixMilli(), 10))
		reply, err := e.nc.RequestMsg(m, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	reply := send("conv/late", time.Now().Add(-time.Minute))
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != string(contract.CodeUnavailable) {
		t.Fatalf("a request a minute past its deadline answered code %q (%s), want unavailable", code, reply.Header.Get(micro.ErrorHeader))
	}
	if a, err := st.Authority("conv/late"); err != nil || a != (contract.Authority{}) {
		t.Fatalf("a request past its deadline installed %s (%v)", a, err)
	}
	for _, c := range []struct {
		res      string
		deadline time.Time
	}{{"conv/late", time.Now().Add(5 * time.Second)}, {"conv/skewed", time.Now().Add(-time.Second)}} {
		reply = send(c.res, c.deadline)
		if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
			t.Fatalf("%s: a request within its deadline and the skew margin: code %q (%s)", c.res, code, reply.Header.Get(micro.ErrorHeader))
		}
		if a, err := st.Authority(c.res); err != nil || a != fence {
			t.Fatalf("%s: a request within its deadline installed %s (%v), want %s", c.res, a, err, fence)
		}
	}
}

// TestSkewedRegionExecutesItsRequests: a region whose clock runs 2 s ahead
// of (or behind) its callers executes requests with less time left than
// that: the caller's budget counts from the request's arrival, by the
// server's own monotonic clock, and the absolute deadline only with the
// stated skew margin. (It used to drop every request whose remaining time
// was below the skew, and a rollback then looped.)
func TestSkewedRegionExecutesItsRequests(t *testing.T) {
	for _, skew := range []time.Duration{2 * time.Second, -2 * time.Second} {
		e := newEnv(t)
		st := openStore(t)
		clock := func() time.Time { return time.Now().Add(skew) }
		e.serve(t, "eu", services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}), contractnats.ServeOptions{Clock: clock})
		c := contractnats.Dial(e.nc, e.js, "eu", "messages")
		a := contract.Authority{Rev: 3, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second) // 1 s left: less than the skew
		got, err := c.Authorize(ctx, "conv/skew", a)
		cancel()
		if err != nil || got != a {
			t.Fatalf("clock %s: Authorize with 1 s left = %s, %v", skew, got, err)
		}
	}
}

// heldAuthorize is a participant whose Authorize of "conv/block" waits for
// release.
type heldAuthorize struct {
	contract.Participant
	entered chan struct{}
	release chan struct{}
}

func (b *heldAuthorize) Authorize(ctx context.Context, res string, a contract.Authority) (contract.Authority, error) {
	if res == "conv/block" {
		b.entered <- struct{}{}
		<-b.release
	}
	return b.Participant.Authorize(ctx, res, a)
}

// TestRequestQueuedPastItsBudgetIsNotExecuted: a request that waits behind
// the server's only slot longer than its caller's budget is dropped
// unexecuted when the slot frees, whatever the clocks say.
func TestRequestQueuedPastItsBudgetIsNotExecuted(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	b := &heldAuthorize{Participant: services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}),
		entered: make(chan struct{}, 1), release: make(chan struct{})}
	e.serve(t, "eu", b, contractnats.ServeOptions{MaxConcurrent: 1})
	c := contractnats.Dial(e.nc, e.js, "eu", "messages")
	a := contract.Authority{Rev: 3, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	first := make(chan error, 1)
	go func() {
		_, err := c.Authorize(context.Background(), "conv/block", a)
		first <- err
	}()
	<-b.entered // the only slot is taken
	body, err := msgpack.Marshal(map[string]any{"res": "conv/queued", "auth": a})
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(contractnats.EndpointSubject("eu", "messages", contractnats.OpAuthority))
	m.Data = body
	m.Header.Set(contractnats.HeaderTimeout, "200")
	sent := time.Now()
	late := make(chan *nats.Msg, 1)
	go func() {
		reply, err := e.nc.RequestMsg(m, time.Minute)
		if err != nil {
			t.Error(err)
		}
		late <- reply
	}()
	for time.Since(sent) < 400*time.Millisecond { // past the queued request's 200 ms budget
		time.Sleep(10 * time.Millisecond)
	}
	close(b.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	reply := <-late
	if reply == nil {
		t.FailNow()
	}
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != string(contract.CodeUnavailable) {
		t.Fatalf("a request queued past its budget answered code %q (%s), want unavailable", code, reply.Header.Get(micro.ErrorHeader))
	}
	if got, err := st.Authority("conv/queued"); err != nil || got != (contract.Authority{}) {
		t.Fatalf("a request queued past its budget installed %s (%v)", got, err)
	}
}

// TestServeRefusesAnotherRoutingEpoch: a store that served under one
// ROUTING bucket's epoch refuses to serve under a bucket created again
// (its revisions restarted): ErrRoutingEpoch, naming both epochs and what
// to do. The same epoch serves again.
func TestServeRefusesAnotherRoutingEpoch(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	if _, err := cnats.ProvisionRouting(ctx, e.js, cnats.RoutingConfig{}); err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	p := services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{})
	serve := func() (*contractnats.Server, error) {
		epoch, err := cnats.ServedEpoch(ctx, e.js)
		if err != nil {
			t.Fatal(err)
		}
		return contractnats.Serve(ctx, e.nc, e.js, "eu", p, contractnats.ServeOptions{RoutingEpoch: epoch})
	}
	for range 2 {
		s, err := serve()
		if err != nil {
			t.Fatalf("serving under the bucket's epoch: %v", err)
		}
		_ = s.Stop()
	}
	old, _ := cnats.RoutingEpoch(ctx, e.js)
	if err := e.js.DeleteKeyValue(ctx, cnats.RoutingBucket); err != nil {
		t.Fatal(err)
	}
	if _, err := cnats.ProvisionRouting(ctx, e.js, cnats.RoutingConfig{}); err != nil {
		t.Fatal(err)
	}
	now, _ := cnats.RoutingEpoch(ctx, e.js)
	s, err := serve()
	if !errors.Is(err, contractnats.ErrRoutingEpoch) {
		if s != nil {
			_ = s.Stop()
		}
		t.Fatalf("serving under a bucket created again: %v, want ErrRoutingEpoch", err)
	}
	for _, want := range []string{old, now, "created again", "Restore the old ROUTING stream"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the refusal %q does not say %q", err, want)
		}
	}
}
