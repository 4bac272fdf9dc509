package api

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// errorJSON is the body of every error response:
// {"error":{"code":...,"message":...,"lock":...,"retry_after_ms":...}}.
type errorJSON struct {
	Code         string `json:"code"`
	Message      string `json:"message"`
	Lock         string `json:"lock,omitempty"`
	RetryAfterMS int64  `json:"retry_after_ms,omitempty"`
}

type errorBody struct {
	Error errorJSON `json:"error"`
}

// writeError writes err as the JSON error shape with the status of its
// code; unknown errors are 500 "internal" and logged, their text withheld.
// A 423 carries Retry-After in whole seconds, at least 1 (paper 001 §4.4).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := services.ToError(err)
	body := errorJSON{Code: string(e.Code), Message: e.Message, Lock: e.Lock}
	status := e.Code.HTTPStatus()
	switch e.Code {
	case contract.CodeInternal:
		s.log.Error("api: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		body.Message = "internal error"
	case contract.CodeLocked:
		ra := max(e.RetryAfter, time.Second)
		secs := int64((ra + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		body.RetryAfterMS = ra.Milliseconds()
	case contract.CodeUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="cutover"`)
	case contract.CodeUnavailable:
		w.Header().Set("Retry-After", "1")
	}
	writeErrorBody(w, status, body)
}

func writeErrorBody(w http.ResponseWriter, status int, body errorJSON) {
	writeJSON(w, status, errorBody{Error: body})
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// authError maps an Authenticator error: a *contract.Error keeps its code,
// anything else is 401.
func authError(err error) error {
	var e *contract.Error
	if errors.As(err, &e) {
		return e
	}
	return contract.Errorf(contract.CodeUnauthorized, "authentication failed")
}

// decodeJSON reads one JSON object into v: at most MaxBodyBytes (413
// beyond), no unknown fields, nothing after the object (400).
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return contract.Errorf(contract.CodeTooLarge, "body of %d bytes, at most %d", r.ContentLength, s.cfg.MaxBodyBytes)
	}
	body := http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err, s.cfg.MaxBodyBytes)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return bodyError(err, s.cfg.MaxBodyBytes)
		}
		return contract.Errorf(contract.CodeInvalid, "malformed JSON: data after the object")
	}
	return nil
}

func bodyError(err error, limit int64) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return contract.Errorf(contract.CodeTooLarge, "body larger than %d bytes", limit)
	case errors.Is(err, io.EOF):
		return contract.Errorf(contract.CodeInvalid, "empty body; want a JSON object")
	}
	return contract.Errorf(contract.CodeInvalid, "malformed JSON: %v", err)
}
