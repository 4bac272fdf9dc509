package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/httproute"
)

// writeError writes err as the JSON error shape (httproute.WriteError).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httproute.WriteError(w, r, err, s.log)
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) { httproute.WriteJSON(w, status, v) }

// authError maps an Authenticator error: a *contract.Error keeps its code,
// anything else is 401.
func authError(err error) error {
	var e *contract.Error
	if errors.As(err, &e) {
		return e
	}
	return contract.Errorf(contract.CodeUnauthorized, "authentication failed")
}

// decodeJSON reads one JSON object into v: a JSON Content-Type or none
// (415 otherwise), at most MaxBodyBytes (413 beyond), UTF-8 throughout
// with no unpaired surrogate escape, an object (not null or another
// value), no unknown fields, nothing after the object (400).
// encoding/json would replace invalid UTF-8 and unpaired surrogates with
// U+FFFD silently; the API refuses them instead.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if err := jsonContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return contract.Errorf(contract.CodeTooLarge, "body of %d bytes, at most %d", r.ContentLength, s.cfg.MaxBodyBytes)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		return bodyError(err, s.cfg.MaxBodyBytes)
	}
	if !utf8.Valid(body) {
		return contract.Errorf(contract.CodeInvalid, "malformed JSON: the body is not valid UTF-8")
	}
	if unpairedSurrogate(body) {
		return contract.Errorf(contract.CodeInvalid, "malformed JSON: a \\u escape of an unpaired UTF-16 surrogate")
	}
	// Decoding null into a struct is no error and changes nothing, so a
	// null body would read as an empty object.
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return contract.Errorf(contract.CodeInvalid, "malformed JSON: want an object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
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

// jsonContentType returns a CodeUnsupportedMediaType *contract.Error
// unless ct is empty (taken as JSON) or application/json, with no charset
// or charset utf-8.
func jsonContentType(ct string) error {
	if ct == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			return nil
		}
	}
	return contract.Errorf(contract.CodeUnsupportedMediaType, "Content-Type %q: want application/json (UTF-8)", ct)
}

// unpairedSurrogate reports whether a JSON text has, inside a string, a
// \uXXXX escape of a UTF-16 surrogate that is not half of a high-low
// pair. Malformed JSON is left to the decoder.
func unpairedSurrogate(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			r, ok := escapedRune(b, i)
			if !ok {
				i++ // a one-letter escape: skip the letter
				continue
			}
			i += 5
			switch {
			case utf16.IsSurrogate(r) && r >= 0xdc00:
				return true // a low half first
			case utf16.IsSurrogate(r):
				lo, ok := escapedRune(b, i+1)
				if !ok || !utf16.IsSurrogate(lo) || lo < 0xdc00 {
					return true
				}
				i += 6
			}
		}
	}
	return false
}

// escapedRune decodes the \uXXXX escape at b[i:].
func escapedRune(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
	return rune(v), err == nil
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
