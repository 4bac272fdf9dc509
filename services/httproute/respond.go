package httproute

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// ErrorJSON is the body of every error response:
// {"error":{"code":...,"message":...,"lock":...,"retry_after_ms":...}}.
type ErrorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Lock    string `json:"lock,omitempty"`
	// RetryAfterMS is set on every 423: Retry-After in milliseconds (0:
	// retry at once, after resolving the routing again).
	RetryAfterMS *int64 `json:"retry_after_ms,omitempty"`
}

type errorBody struct {
	Error ErrorJSON `json:"error"`
}

// WriteError writes err as the JSON error shape with the status of its
// code (services.ToError); unknown errors are 500 "internal" and logged to
// log (nil: slog.Default()), their text withheld. The message a client
// reads names no Go package (contract.ClientText: "store: not found: ..."
// reads "not found: ..."). A 423 carries
// Retry-After in whole seconds, rounded to the nearest (0: retry at once),
// and retry_after_ms exactly (paper 001 §4.4): the expected rest of the
// restriction, never the lease. A 503 carries Retry-After 1.
func WriteError(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	e := services.ToError(err)
	body := ErrorJSON{Code: string(e.Code), Message: contract.ClientText(e.Message), Lock: e.Lock}
	status := e.Code.HTTPStatus()
	switch e.Code {
	case contract.CodeInternal:
		if log == nil {
			log = slog.Default()
		}
		log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		body.Message = "internal error"
	case contract.CodeLocked:
		ra := max(e.RetryAfter, 0)
		secs := int64((ra + time.Second/2) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		ms := ra.Milliseconds()
		body.RetryAfterMS = &ms
	case contract.CodeUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="cutover"`)
	case contract.CodeUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	WriteErrorBody(w, status, body)
}

// WriteErrorBody writes body as the error shape with status.
func WriteErrorBody(w http.ResponseWriter, status int, body ErrorJSON) {
	WriteJSON(w, status, errorBody{Error: body})
}

// WriteJSON writes v with status, not to be cached.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
