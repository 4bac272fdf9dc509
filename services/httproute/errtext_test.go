package httproute_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/httproute"
	"github.com/cutover/cutover/services/store"
)

// TestErrorsNameNoPackage: WriteError answers the routing library's and
// the store's errors, and RoutingError's, without their Go package
// prefixes ("kvrouting: ", "store: "), while errors.Is still matches them
// for a Go caller.
func TestErrorsNameNoPackage(t *testing.T) {
	bad := kvrouting.Resource{Kind: "conv", ID: strings.Repeat("x", 300)}.Validate()
	if !errors.Is(bad, kvrouting.ErrInvalid) {
		t.Fatalf("Validate: %v, want ErrInvalid", bad)
	}
	now := time.Now()
	for _, tc := range []struct {
		name   string
		err    error
		status int
		want   string
	}{
		{"routing invalid", httproute.RoutingError(bad, "conversation", "x"), 400, "invalid resource id: longer than 200 bytes"},
		{"routing not found", httproute.RoutingError(fmt.Errorf("%w: conv/x", kvrouting.ErrNotFound), "conversation", "x"), 404, `conversation "x" not found`},
		{"bare kvrouting invalid", bad, 400, "invalid argument: resource id: longer than 200 bytes"},
		{"store invalid", fmt.Errorf("%w: record id %q", store.ErrInvalid, "a"), 400, `invalid argument: record id "a"`},
		{"store not found", fmt.Errorf("%w: message %q", store.ErrNotFound, "m"), 404, `not found: message "m"`},
		{"routing conflict", kvrouting.ErrConflict, 409, "revision conflict"},
		{"routing unavailable", fmt.Errorf("%w: no leader", kvrouting.ErrUnavailable), 503, "routing store unavailable: no leader"},
		{"locked", &kvrouting.LockedError{Resource: "conv/x", Lock: kvrouting.Lock{Type: kvrouting.LockWrite, Token: "0123456789abcdef", Expiry: now.Add(time.Second)}, Region: "r1", Now: now}, 423, "resource conv/x locked"},
		{"wrapped in a message", contract.Errorf(contract.CodeInvalid, "ref: %v", fmt.Errorf("%w: bad", store.ErrInvalid)), 400, "ref: invalid argument: bad"},
		{"quoted id kept", contract.Errorf(contract.CodeInvalid, "id %q: bad", "store: x"), 400, `id "store: x": bad`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			httproute.WriteError(w, httptest.NewRequest("GET", "/x", nil), tc.err, nil)
			var body struct {
				Error httproute.ErrorJSON `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if w.Code != tc.status || body.Error.Message != tc.want && !strings.HasPrefix(body.Error.Message, tc.want) {
				t.Fatalf("%d %q, want %d %q", w.Code, body.Error.Message, tc.status, tc.want)
			}
			for _, p := range []string{"kvrouting:", "store:", "contract:", "participant:"} {
				if strings.HasPrefix(body.Error.Message, p) || strings.Contains(body.Error.Message, ": "+p) {
					t.Fatalf("message %q names a Go package", body.Error.Message)
				}
			}
		})
	}
}
