package httpapi_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cutover/cutover/projector/httpapi"
	"github.com/cutover/cutover/services/contract"
)

// TestUnauthorizedNamesNoPackage: the 401 tells why the credentials were
// refused in the authenticator's own words, without the error code or a
// Go package prefix in front of them.
func TestUnauthorizedNamesNoPackage(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{contract.Errorf(contract.CodeUnauthorized, "bad or expired user token"), "authentication required: bad or expired user token"},
		{errors.New("kvrouting: routing store unavailable"), "authentication required: routing store unavailable"},
	} {
		h := httpapi.Handler(nil, nil, httpapi.Options{Authenticate: func(*http.Request) error { return tc.err }})
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/v1/migrations", nil))
		var body struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		if w.Code != http.StatusUnauthorized || body.Error.Message != tc.want {
			t.Errorf("%d %q, want 401 %q", w.Code, body.Error.Message, tc.want)
		}
	}
}
