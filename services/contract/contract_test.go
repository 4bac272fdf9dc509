package contract_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/cutover/cutover/services/contract"
)

// TestHTTPStatus keeps the numeric statuses in step with net/http.
func TestHTTPStatus(t *testing.T) {
	for code, want := range map[contract.Code]int{
		contract.CodeInvalid:      http.StatusBadRequest,
		contract.CodeUnauthorized: http.StatusUnauthorized,
		contract.CodeForbidden:    http.StatusForbidden,
		contract.CodeNotFound:     http.StatusNotFound,
		contract.CodeConflict:     http.StatusConflict,
		contract.CodeTooLarge:     http.StatusRequestEntityTooLarge,
		contract.CodeLocked:       http.StatusLocked,
		contract.CodeUnavailable:  http.StatusServiceUnavailable,
		contract.CodeInternal:     http.StatusInternalServerError,
		"made-up":                 http.StatusInternalServerError,

		contract.CodeMethodNotAllowed:     http.StatusMethodNotAllowed,
		contract.CodeUnsupportedMediaType: http.StatusUnsupportedMediaType,
	} {
		if got := code.HTTPStatus(); got != want {
			t.Errorf("%q.HTTPStatus() = %d, want %d", code, got, want)
		}
	}
}

func TestAsError(t *testing.T) {
	locked := &contract.Error{Code: contract.CodeLocked, Message: "m", RetryAfter: time.Second}
	for _, c := range []struct {
		in   error
		want contract.Code
	}{
		{locked, contract.CodeLocked},
		{fmt.Errorf("wrapped: %w", locked), contract.CodeLocked},
		{context.DeadlineExceeded, contract.CodeUnavailable},
		{fmt.Errorf("call: %w", context.Canceled), contract.CodeUnavailable},
		{errors.New("boom"), contract.CodeInternal},
	} {
		if got := contract.AsError(c.in); got == nil || got.Code != c.want {
			t.Errorf("AsError(%v) = %v, want code %q", c.in, got, c.want)
		}
	}
	if got := contract.AsError(fmt.Errorf("x: %w", locked)); got != locked {
		t.Errorf("AsError did not return the *Error in the chain: %v", got)
	}
	if contract.AsError(nil) != nil {
		t.Error("AsError(nil) != nil")
	}
}
