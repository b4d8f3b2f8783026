package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// MaxBodyBytes bounds request bodies.
const MaxBodyBytes = 64 << 10

// readBody reads a JSON body of at most MaxBodyBytes. A body that is not
// empty must be sent as Content-Type application/json (415 otherwise); an
// empty body, with any or no content type, means {}.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, body: Error{Code: "PayloadTooLarge",
			Message: "the request body is over the limit of 64 KiB", Details: map[string]any{"field": "body"}}}
	}
	if err != nil {
		return nil, badRequest("body", "the request body could not be read to its end; send the request again")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return []byte("{}"), nil
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return nil, &apiError{status: http.StatusUnsupportedMediaType, body: Error{Code: "UnsupportedMediaType",
			Message: fmt.Sprintf("the request body must be JSON sent with Content-Type: application/json, got Content-Type %s", quote(ct)),
			Details: map[string]any{"field": "Content-Type"}}}
	}
	return body, nil
}

// decodeStrict decodes body, a single JSON object, into v, whose fields are
// the only ones allowed. what names the body in messages ("the body of
// mark_recoverable"). Errors are 400s naming the field at fault ("body"
// when the body as a whole is at fault), without Go type names.
func decodeStrict(body []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, v, what)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("body", "%s has data after its JSON object; send one object", what)
	}
	return nil
}

// jsonError translates an encoding/json error into a 400 naming the field.
func jsonError(err error, v any, what string) error {
	var (
		typeErr   *json.UnmarshalTypeError
		syntaxErr *json.SyntaxError
	)
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return badRequest("body", "%s must be a JSON object, got %s", what, typeErr.Value)
		}
		return badRequest(typeErr.Field, "field %q: must be %s, got %s", typeErr.Field, describeType(typeErr.Type), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return badRequest("body", "%s is not valid JSON: %s (at byte %d)", what, syntaxErr.Error(), syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest("body", "%s ends before its JSON object does", what)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if n, uerr := strconv.Unquote(name); uerr == nil {
			name = n
		}
		return badRequest(fieldName(name, "body"), "unknown field %s in %s; the fields are %s", quote(name), what, strings.Join(jsonFields(reflect.TypeOf(v)), ", "))
	}
	return badRequest("body", "%s could not be read as JSON", what)
}

// describeType says what JSON value a Go type takes, for messages.
func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int32:
		return fmt.Sprintf("a whole number from %d to %d", math.MinInt32, math.MaxInt32)
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct, reflect.Map:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	}
	return "another JSON value"
}

// jsonFields lists the JSON names of a struct's fields.
func jsonFields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
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
