package contractnats_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// TestRequestPastItsDeadlineIsNotExecuted: a request that reaches its
// handler after the caller's absolute deadline (queued behind the server's
// slots, or held in a reconnect buffer and sent after the caller gave up)
// is dropped unexecuted: here an authority request, which must install
// nothing.
func TestRequestPastItsDeadlineIsNotExecuted(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	fence := contract.Authority{Rev: 5, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	body, err := msgpack.Marshal(map[string]any{"res": "conv/late", "auth": fence})
	if err != nil {
		t.Fatal(err)
	}
	send := func(deadline time.Time) *nats.Msg {
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
	reply := send(time.Now().Add(-time.Second))
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != string(contract.CodeUnavailable) {
		t.Fatalf("a request past its deadline answered code %q (%s), want unavailable", code, reply.Header.Get(micro.ErrorHeader))
	}
	if a, err := st.Authority("conv/late"); err != nil || a != (contract.Authority{}) {
		t.Fatalf("a request past its deadline installed %s (%v)", a, err)
	}
	reply = send(time.Now().Add(5 * time.Second))
	if code := reply.Header.Get(micro.ErrorCodeHeader); code != "" {
		t.Fatalf("a request within its deadline: code %q (%s)", code, reply.Header.Get(micro.ErrorHeader))
	}
	if a, err := st.Authority("conv/late"); err != nil || a != fence {
		t.Fatalf("a request within its deadline installed %s (%v), want %s", a, err, fence)
	}
}
