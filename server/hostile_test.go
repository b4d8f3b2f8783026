package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileCase is one bad request and the refusal it must get.
type hostileCase struct {
	name   string
	method string
	path   string // {id} is replaced by an existing record's id
	body   any
	header []string
	status int
	code   string
	field  string // details.field; "" means none is expected
	msg    string // a part of the message
	as     string // who sends it: "" the operator, "viewer", "nobody"
}

// TestHostileInput sends every endpoint bad input and checks the status,
// the code, the field named, that the message shows no Go internals, and
// that nothing was written to the records' stream.
func TestHostileInput(t *testing.T) {
	e := newEnv(t)
	id := e.create(t, 1, nil)
	long := strings.Repeat("x", 4000)
	ctrl := url.PathEscape("a\x00b")
	cases := []hostileCase{
		// GET /api/v1/records/{id} and /history
		{name: "get long id", method: "GET", path: "/api/v1/records/" + long, status: 400, code: "BadRequest", field: "id", msg: "id is 4000 bytes, over the limit of 256"},
		{name: "get id with NUL", method: "GET", path: "/api/v1/records/" + ctrl, status: 400, code: "BadRequest", field: "id", msg: "control character U+0000"},
		{name: "get id not UTF-8", method: "GET", path: "/api/v1/records/%ff%fe", status: 400, code: "BadRequest", field: "id", msg: "not valid UTF-8"},
		{name: "get unknown id", method: "GET", path: "/api/v1/records/nope", status: 404, code: "NotFound", msg: "no ExecutionFailed record with id nope"},
		{name: "get with a query", method: "GET", path: "/api/v1/records/{id}?x=1", status: 400, code: "BadRequest", field: "x", msg: `unknown query parameter "x"`},
		{name: "history long id", method: "GET", path: "/api/v1/records/" + long + "/history", status: 400, code: "BadRequest", field: "id", msg: "over the limit of 256"},
		{name: "history unknown id", method: "GET", path: "/api/v1/records/nope/history", status: 404, code: "NotFound"},
		{name: "get by POST", method: "POST", path: "/api/v1/records/{id}", status: 405, code: "MethodNotAllowed", msg: `use GET or HEAD`},
		// GET /api/v1/records, /count, /summary, /views/{view}
		{name: "list long value", method: "GET", path: "/api/v1/records?processor=" + long, status: 400, code: "BadRequest", field: "processor", msg: "processor is 4000 bytes, over the limit of 256"},
		{name: "list long id filter", method: "GET", path: "/api/v1/records?id=" + long, status: 400, code: "BadRequest", field: "id", msg: "over the limit of 256"},
		{name: "list repeated", method: "GET", path: "/api/v1/records?status=FAILED&status=PREPARED", status: 400, code: "BadRequest", field: "status", msg: "given 2 times"},
		{name: "list unknown param", method: "GET", path: "/api/v1/records?stauts=FAILED", status: 400, code: "BadRequest", field: "stauts", msg: `unknown query parameter "stauts"`},
		{name: "list long param name", method: "GET", path: "/api/v1/records?" + long + "=1", status: 400, code: "BadRequest", field: long[:256], msg: "(4000 bytes)"},
		{name: "list bad enum", method: "GET", path: "/api/v1/records?status=BROKEN", status: 400, code: "BadRequest", field: "status", msg: `got "BROKEN"`},
		{name: "list limit 0", method: "GET", path: "/api/v1/records?limit=0", status: 400, code: "BadRequest", field: "limit", msg: "limit must be a whole number from 1 to 1000"},
		{name: "list order", method: "GET", path: "/api/v1/records?order=sideways", status: 400, code: "BadRequest", field: "order", msg: "order must be asc or desc"},
		{name: "list sort", method: "GET", path: "/api/v1/records?sort=color", status: 400, code: "BadRequest", field: "sort", msg: "sort must be one of executeAt, nextRetryAt, retries"},
		{name: "list bad cursor", method: "GET", path: "/api/v1/records?cursor=garbage", status: 400, code: "BadRequest", field: "cursor", msg: `cursor "garbage" is not a cursor`},
		{name: "list long cursor", method: "GET", path: "/api/v1/records?cursor=" + long, status: 400, code: "BadRequest", field: "cursor", msg: "over the limit of 256"},
		{name: "list time", method: "GET", path: "/api/v1/records?executeAtFrom=monday", status: 400, code: "BadRequest", field: "executeAtFrom", msg: "executeAtFrom must be an RFC 3339 time"},
		{name: "list minRetries", method: "GET", path: "/api/v1/records?minRetries=-1", status: 400, code: "BadRequest", field: "minRetries"},
		{name: "list control char", method: "GET", path: "/api/v1/records?errorCode=a%0Ab", status: 400, code: "BadRequest", field: "errorCode", msg: "control character U+000A"},
		{name: "list bad escape", method: "GET", path: "/api/v1/records?status=%zz", status: 400, code: "BadRequest", field: "query", msg: `the query string is malformed: URL escape "%zz"`},
		{name: "list semicolon", method: "GET", path: "/api/v1/records?status=FAILED;limit=1", status: 400, code: "BadRequest", field: "query", msg: "semicolon"},
		{name: "get bad escape", method: "GET", path: "/api/v1/records/{id}?%zz", status: 400, code: "BadRequest", field: "query"},
		{name: "list empty param name", method: "GET", path: "/api/v1/records?=1", status: 400, code: "BadRequest", field: "query", msg: `unknown query parameter ""`},
		{name: "list by POST", method: "POST", path: "/api/v1/records", status: 405, code: "MethodNotAllowed"},
		{name: "count unknown", method: "GET", path: "/api/v1/count?limit=1", status: 400, code: "BadRequest", field: "limit"},
		{name: "summary bad enum", method: "GET", path: "/api/v1/summary?recoverable=maybe", status: 400, code: "BadRequest", field: "recoverable", msg: "recoverable must be"},
		{name: "view unknown", method: "GET", path: "/api/v1/views/someday", status: 400, code: "BadRequest", field: "view", msg: "the views are to-retry, executing"},
		{name: "view long", method: "GET", path: "/api/v1/views/" + long, status: 400, code: "BadRequest", field: "view", msg: "over the limit of 256"},
		// POST /api/v1/records/{id}/{command}
		{name: "command long id", method: "POST", path: "/api/v1/records/" + long + "/prepare_compensation", status: 400, code: "BadRequest", field: "id", msg: "over the limit of 256"},
		{name: "command unknown", method: "POST", path: "/api/v1/records/{id}/delete", status: 404, code: "NotFound", field: "command", msg: `unknown command "delete"`},
		{name: "command long name", method: "POST", path: "/api/v1/records/{id}/" + long, status: 404, code: "NotFound", field: "command", msg: "(4000 bytes)"},
		{name: "command by GET", method: "GET", path: "/api/v1/records/{id}/prepare_compensation", status: 405, code: "MethodNotAllowed", msg: "use POST"},
		{name: "command with a query", method: "POST", path: "/api/v1/records/{id}/prepare_compensation?dryRun=1", status: 400, code: "BadRequest", field: "dryRun"},
		{name: "text content type", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", body: `{}`, header: []string{"Content-Type", "text/plain"}, status: 415, code: "UnsupportedMediaType", field: "Content-Type", msg: `got Content-Type "text/plain"`},
		{name: "form content type", method: "POST", path: "/api/v1/records/{id}/mark_recoverable", body: `recoverable=UNKNOWN`, header: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: 415, code: "UnsupportedMediaType", field: "Content-Type"},
		{name: "unknown field", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", body: `{"force":true}`, status: 400, code: "BadRequest", field: "force", msg: `unknown field "force" in the body of prepare_compensation; the fields are reason`},
		{name: "empty field name", method: "POST", path: "/api/v1/records/{id}/mark_recoverable", body: `{"":0}`, status: 400, code: "BadRequest", field: "body", msg: `unknown field ""`},
		{name: "trailing data", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", body: `{} {}`, status: 400, code: "BadRequest", field: "body", msg: "data after its JSON object"},
		{name: "array body", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", body: `[]`, status: 400, code: "BadRequest", field: "body", msg: "must be a JSON object, got array"},
		{name: "syntax", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", body: `{"reason":x}`, status: 400, code: "BadRequest", field: "body", msg: "not valid JSON"},
		{name: "enum of wrong type", method: "POST", path: "/api/v1/records/{id}/mark_recoverable", body: `{"recoverable":5}`, status: 400, code: "BadRequest", field: "recoverable", msg: `field "recoverable": must be a string, got number`},
		{name: "enum unknown", method: "POST", path: "/api/v1/records/{id}/mark_recoverable", body: `{"recoverable":"SOMETIMES"}`, status: 400, code: "BadRequest", field: "recoverable", msg: `got "SOMETIMES"`},
		{name: "int overflow", method: "POST", path: "/api/v1/records/{id}/apply_retry_spec", body: `{"maxRetries":99999999999,"minBackoff":1,"executionTimeout":1}`, status: 400, code: "BadRequest", field: "maxRetries", msg: `field "maxRetries": must be a whole number from -2147483648 to 2147483647, got number 99999999999`},
		{name: "missing field", method: "POST", path: "/api/v1/records/{id}/apply_retry_spec", body: `{"maxRetries":1,"minBackoff":1}`, status: 400, code: "BadRequest", field: "executionTimeout", msg: "apply_retry_spec requires the field executionTimeout."},
		{name: "timeout 0", method: "POST", path: "/api/v1/records/{id}/apply_retry_spec", body: `{"maxRetries":1,"minBackoff":1,"executionTimeout":0}`, status: 422, code: "IllegalArgument", field: "executionTimeout", msg: "executionTimeout must be at least 1 second"},
		{name: "negative timeout", method: "POST", path: "/api/v1/records/{id}/apply_retry_spec", body: `{"maxRetries":1,"minBackoff":1,"executionTimeout":-1}`, status: 422, code: "IllegalArgument", field: "executionTimeout", msg: "executionTimeout must be greater than or equal to 0."},
		{name: "Wow's order", method: "POST", path: "/api/v1/records/{id}/apply_retry_spec", body: `{"maxRetries":-1,"minBackoff":-1,"executionTimeout":0}`, status: 422, code: "IllegalArgument", field: "maxRetries", msg: "maxRetries must be greater than or equal to 0."},
		{name: "negative backoff", method: "POST", path: "/api/v1/records/{id}/apply_retry_spec", body: `{"maxRetries":1,"minBackoff":-1,"executionTimeout":1}`, status: 422, code: "IllegalArgument", field: "minBackoff", msg: "minBackoff must be greater than or equal to 0."},
		{name: "backoff overflow", method: "POST", path: "/api/v1/records/{id}/apply_retry_spec", body: `{"maxRetries":100,"minBackoff":1,"executionTimeout":1}`, status: 422, code: "IllegalArgument", field: "minBackoff", msg: "Retry backoff exceeds the supported millisecond range."},
		{name: "timeout overflow", method: "POST", path: "/api/v1/records/{id}/apply_retry_spec", body: `{"maxRetries":0,"minBackoff":0,"executionTimeout":2147483647}`, status: 200},
		{name: "long function name", method: "POST", path: "/api/v1/records/{id}/change_function", body: map[string]string{"functionKind": "EVENT", "contextName": "order", "processorName": long, "name": "f", "reason": "r"}, status: 400, code: "BadRequest", field: "processorName", msg: "processorName is 4000 bytes"},
		{name: "no reason", method: "POST", path: "/api/v1/records/{id}/force_prepare_compensation", body: `{}`, status: 400, code: "BadRequest", field: "reason"},
		{name: "reason with newline", method: "POST", path: "/api/v1/records/{id}/force_prepare_compensation", body: `{"reason":"a\nb"}`, status: 400, code: "BadRequest", field: "reason"},
		{name: "long idempotency key", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", header: []string{"Idempotency-Key", long}, status: 400, code: "BadRequest", field: "Idempotency-Key", msg: "Idempotency-Key is 4000 bytes, over the limit of 256"},
		{name: "long request id", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", header: []string{"X-Request-Id", long}, status: 400, code: "BadRequest", field: "X-Request-Id"},
		{name: "long traceparent", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", header: []string{"Traceparent", long}, status: 400, code: "BadRequest", field: "Traceparent"},
		// POST /api/v1/batch/{command}
		{name: "batch unknown command", method: "POST", path: "/api/v1/batch/apply_retry_spec", body: `{}`, status: 404, code: "NotFound", field: "command"},
		{name: "batch unknown field", method: "POST", path: "/api/v1/batch/prepare_compensation", body: `{"dryRun":true,"filtr":{}}`, status: 400, code: "BadRequest", field: "filtr", msg: `unknown field "filtr"`},
		{name: "batch unknown filter", method: "POST", path: "/api/v1/batch/prepare_compensation", body: `{"dryRun":true,"filter":{"stauts":"FAILED"}}`, status: 400, code: "BadRequest", field: "filter.stauts"},
		{name: "batch empty filter name", method: "POST", path: "/api/v1/batch/prepare_compensation", body: `{"dryRun":true,"filter":{"":"x"}}`, status: 400, code: "BadRequest", field: "filter"},
		{name: "batch filter enum", method: "POST", path: "/api/v1/batch/prepare_compensation", body: `{"dryRun":true,"filter":{"status":5}}`, status: 400, code: "BadRequest", field: "filter.status", msg: "must be a string"},
		{name: "batch filter bad enum", method: "POST", path: "/api/v1/batch/prepare_compensation", body: `{"dryRun":true,"filter":{"status":"BROKEN"}}`, status: 400, code: "BadRequest", field: "filter.status", msg: "status must be"},
		{name: "batch filter long", method: "POST", path: "/api/v1/batch/prepare_compensation", body: map[string]any{"dryRun": true, "filter": map[string]string{"processor": long}}, status: 400, code: "BadRequest", field: "filter.processor", msg: "over the limit of 256"},
		{name: "batch long request id", method: "POST", path: "/api/v1/batch/prepare_compensation", body: map[string]any{"requestId": long}, status: 400, code: "BadRequest", field: "requestId", msg: "over the limit of 256"},
		{name: "batch text", method: "POST", path: "/api/v1/batch/prepare_compensation", body: `{}`, header: []string{"Content-Type", "text/plain"}, status: 415, code: "UnsupportedMediaType", field: "Content-Type"},
		{name: "batch trailing", method: "POST", path: "/api/v1/batch/prepare_compensation", body: `{"dryRun":true}x`, status: 400, code: "BadRequest", field: "body"},
		{name: "batch by GET", method: "GET", path: "/api/v1/batch/prepare_compensation", status: 405, code: "MethodNotAllowed"},
		// auth
		{name: "no token", method: "GET", path: "/api/v1/records", as: "nobody", status: 401, code: "Unauthorized"},
		{name: "no token for a command", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", as: "nobody", status: 401, code: "Unauthorized"},
		{name: "viewer's command", method: "POST", path: "/api/v1/records/{id}/prepare_compensation", as: "viewer", status: 403, code: "Forbidden", msg: "token alice has role viewer"},
		{name: "viewer's batch", method: "POST", path: "/api/v1/batch/prepare_compensation", body: `{"dryRun":true}`, as: "viewer", status: 403, code: "Forbidden"},
		{name: "viewer's long id", method: "GET", path: "/api/v1/records/" + long, as: "viewer", status: 400, code: "BadRequest", field: "id"},
		{name: "metrics without token", method: "GET", path: "/metrics", as: "nobody", status: 401, code: "Unauthorized"},
		// elsewhere
		{name: "no route", method: "GET", path: "/api/v2/records", status: 404, code: "NotFound", msg: "no route GET /api/v2/records"},
		{name: "healthz by POST", method: "POST", path: "/healthz", status: 405, code: "MethodNotAllowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.lastSeq(t)
			token := map[string]string{"": operatorKey, "viewer": viewerKey, "nobody": ""}[c.as]
			r := e.do(t, c.method, strings.ReplaceAll(c.path, "{id}", id), token, c.body, c.header...)
			require.Equal(t, c.status, r.status, "body: %.400s", r.body)
			if c.status == http.StatusOK {
				return
			}
			var raw map[string]json.RawMessage
			r.json(t, &raw)
			for k := range raw {
				assert.Contains(t, []string{"code", "message", "details"}, k, "the error body is {code, message, details}")
			}
			got := r.apiError(t)
			assert.Equal(t, c.code, got.Code)
			if c.field != "" {
				assert.Equal(t, c.field, got.Details["field"], "details.field")
			}
			assert.Contains(t, got.Message, c.msg)
			assert.Less(t, len(got.Message), 1000, "the message quotes no long value")
			for _, leak := range []string{"Go struct", "json: ", "projection: ", "eventstore: ", "aggregate.", "server: ", "int32", "*"} {
				assert.NotContains(t, got.Message, leak, "the message shows no Go internals")
			}
			if c.status == http.StatusUnauthorized {
				assert.Equal(t, `Bearer realm="amends"`, r.header.Get("WWW-Authenticate"))
			}
			if c.status == http.StatusMethodNotAllowed {
				assert.NotEmpty(t, r.header.Get("Allow"), "a 405 says what is allowed")
			}
			assert.Equal(t, before, e.lastSeq(t), "a refused request writes nothing")
		})
	}
	e.healthy(t)
	var v struct{ Version uint64 }
	e.do(t, "GET", "/api/v1/records/"+id, viewerKey, nil).json(t, &v)
	assert.Equal(t, uint64(2), v.Version, "only the one valid request (timeout overflow fits) changed the record")
}
