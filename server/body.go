package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/jsontype"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxBodyBytes bounds request bodies.
const MaxBodyBytes = 64 << 10

// DefaultBodyTimeout is how long a request's body may take to arrive after
// its handler starts reading it (Config.BodyTimeout): 64 KiB in 10 s is a
// client slower than 6.4 KB/s, or one that holds a connection on purpose.
const DefaultBodyTimeout = 10 * time.Second

// readBody reads a JSON body of at most MaxBodyBytes within the server's
// body timeout. A body that is not empty must be sent as Content-Type
// application/json, with no parameter but charset=utf-8 (415 otherwise);
// an empty body, with any or no content type, means {}. A body that does
// not arrive in time is a 408 RequestTimeout, and the connection closes.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	// A ResponseWriter that cannot set deadlines (a test's recorder) reads
	// without one; the http.Server's ReadTimeout still bounds the request.
	deadline := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if deadline && err == nil {
		// A body that failed keeps its passed deadline, so that the
		// server does not wait for the rest of it either.
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, body: api.Error{Code: "PayloadTooLarge",
			Message: "the request body is over the limit of 64 KiB", Details: map[string]any{"field": "body"}}}
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return nil, &apiError{status: http.StatusRequestTimeout, body: api.Error{Code: "RequestTimeout",
			Message: fmt.Sprintf("the request body did not arrive within %s; send it at once, not byte by byte", s.cfg.BodyTimeout),
			Details: map[string]any{"field": "body"}}}
	case err != nil:
		return nil, badRequest("body", "the request body could not be read to its end; send the request again")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("{}"), nil
	}
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	return body, nil
}

// checkContentType accepts application/json with at most the parameter
// charset=utf-8 (RFC 8259 §8.1: JSON is UTF-8).
func checkContentType(ct string) error {
	unsupported := func(msg string) error {
		return &apiError{status: http.StatusUnsupportedMediaType, body: api.Error{Code: "UnsupportedMediaType",
			Message: msg, Details: map[string]any{"field": "Content-Type"}}}
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return unsupported(fmt.Sprintf("the request body must be JSON sent with Content-Type: application/json, got Content-Type %s", quote(ct)))
	}
	for k, v := range params {
		if k != "charset" {
			return unsupported(fmt.Sprintf("Content-Type application/json takes no parameter %s; send Content-Type: application/json", quote(k)))
		}
		if !strings.EqualFold(v, "utf-8") {
			return unsupported(fmt.Sprintf("the request body must be UTF-8 JSON, got charset %s; send Content-Type: application/json", quote(v)))
		}
	}
	return nil
}

// decodeStrict decodes body, a single JSON object, into v, whose fields are
// the only ones allowed. Field names match exactly (case included), no
// name may appear twice in an object, every string must be valid UTF-8
// (no lone surrogate escapes either), and nothing may follow the object.
// what names the body in messages ("the body of mark_recoverable"). Errors
// are 400s naming the field at fault ("body" when the body as a whole is
// at fault), without Go type names, and quote at most 40 bytes of a value.
func decodeStrict(body []byte, v any, what string) error {
	if err := jsonv2.Unmarshal(body, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return jsonError(err, v, what)
	}
	return nil
}

// jsonError translates a json/v2 error into a 400 naming the field.
func jsonError(err error, v any, what string) error {
	var (
		sem *jsonv2.SemanticError
		syn *jsontext.SyntacticError
	)
	switch {
	case errors.As(err, &sem):
		field := pointerField(sem.JSONPointer)
		if errors.Is(sem.Err, jsonv2.ErrUnknownName) {
			parent, name := splitField(field)
			return badRequest(fieldName(field, "body"), "unknown field %s in %s; the fields are %s", quote(name), what+parentSuffix(parent), strings.Join(jsonFields(fieldType(reflect.TypeOf(v), parent)), ", "))
		}
		got := jsontype.Kind(sem.JSONKind)
		if sem.JSONKind == '0' && len(sem.JSONValue) > 0 {
			got += " " + clipNumber(string(sem.JSONValue))
		}
		if field == "" {
			return badRequest("body", "%s must be a JSON object, got %s", what, got)
		}
		return badRequest(fieldName(field, "body"), "field %s: must be %s, got %s", quote(field), jsontype.Describe(sem.GoType), got)
	case errors.As(err, &syn):
		field := pointerField(syn.JSONPointer)
		inField := ""
		if field != "" {
			inField = " in field " + quote(field)
		}
		msg := ""
		if syn.Err != nil {
			msg = syn.Err.Error()
		}
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return badRequest(fieldName(field, "body"), "field %s is given twice in %s; give every field once", quote(field), what)
		case strings.Contains(msg, "UTF-8"), strings.Contains(msg, "surrogate"):
			return badRequest(fieldName(field, "body"), "%s has text that is not valid UTF-8%s (at byte %d); send UTF-8, with surrogate escapes only in pairs", what, inField, syn.ByteOffset)
		case errors.Is(syn.Err, io.ErrUnexpectedEOF):
			return badRequest("body", "%s ends before its JSON object does", what)
		case strings.Contains(msg, "after top-level value"):
			return badRequest("body", "%s has data after its JSON object; send one object", what)
		}
		return badRequest("body", "%s is not valid JSON%s (at byte %d)", what, inField, syn.ByteOffset)
	}
	return badRequest("body", "%s could not be read as JSON", what)
}

// pointerField turns a JSON pointer ("/filter/status") into the API's
// field path ("filter.status").
func pointerField(p jsontext.Pointer) string {
	var parts []string
	for tok := range p.Tokens() {
		parts = append(parts, tok)
	}
	return strings.Join(parts, ".")
}

// splitField splits a field path into its parent and last name.
func splitField(field string) (parent, name string) {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		return field[:i], field[i+1:]
	}
	return "", field
}

func parentSuffix(parent string) string {
	if parent == "" {
		return ""
	}
	return " (in " + quote(parent) + ")"
}

// fieldType is the type of the struct field at path in t ("" is t).
func fieldType(t reflect.Type, path string) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path == "" {
		return t
	}
	head, rest, _ := strings.Cut(path, ".")
	if t.Kind() != reflect.Struct {
		return t
	}
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name == head {
			return fieldType(t.Field(i).Type, rest)
		}
	}
	return t
}

// clipNumber shows a JSON number of a message, its first 40 characters
// if it is longer (a number is ASCII).
func clipNumber(n string) string {
	if len(n) <= 40 {
		return n
	}
	return fmt.Sprintf("%s... (%d characters)", n[:40], len(n))
}

// jsonFields lists the JSON names of a struct's fields.
func jsonFields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// readJSON reads the request's body (bounded, as readBody reads it) and
// decodes it strictly (decodeStrict) into a T; what names the body in the
// errors.
func readJSON[T any](s *Server, w http.ResponseWriter, r *http.Request, what string) (T, error) {
	var v T
	body, err := s.readBody(w, r)
	if err != nil {
		return v, err
	}
	return v, decodeStrict(body, &v, what)
}
