package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/quarantine"
)

// obj is a JSON object of the document.
type obj = map[string]any

func loadDoc(t *testing.T) obj {
	t.Helper()
	var doc obj
	require.NoError(t, json.Unmarshal(openAPIDocument, &doc))
	require.True(t, strings.HasPrefix(str(doc["openapi"]), "3."), "an OpenAPI 3 document")
	return doc
}

func str(v any) string { s, _ := v.(string); return s }

// get walks keys from v; a missing key gives nil.
func get(v any, keys ...string) any {
	for _, k := range keys {
		o, ok := v.(obj)
		if !ok {
			return nil
		}
		v = o[k]
	}
	return v
}

// deref resolves a local $ref ("#/components/...").
func deref(doc obj, v any) obj {
	for {
		o, _ := v.(obj)
		ref := str(o["$ref"])
		if ref == "" {
			return o
		}
		v = get(doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
	}
}

// operations lists "METHOD path" → operation.
func operations(doc obj) map[string]obj {
	out := map[string]obj{}
	for path, ops := range get(doc, "paths").(obj) {
		for method, op := range ops.(obj) {
			out[strings.ToUpper(method)+" "+path] = op.(obj)
		}
	}
	return out
}

func keys(o obj) []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	sort.Strings(out)
	return out
}

// The document describes exactly the routes the server serves, except the
// fallbacks that only explain an unknown command.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadDoc(t)
	documented := slices.Sorted(func(yield func(string) bool) {
		for k := range operations(doc) {
			yield(k)
		}
	})
	var served []string
	for _, rt := range New(Config{}).routes {
		if rt.fallback {
			assert.Contains(t, rt.pattern, "{command}", "a fallback only catches unknown commands")
			continue
		}
		served = append(served, rt.method+" "+rt.pattern)
	}
	sort.Strings(served)
	assert.Equal(t, served, documented)
}

// queryParams resolves the query parameters of one operation.
func queryParams(doc obj, op obj) []string {
	var out []string
	for _, p := range get(op, "parameters").([]any) {
		p := deref(doc, p)
		if p["in"] == "query" {
			out = append(out, str(p["name"]))
		}
	}
	sort.Strings(out)
	return out
}

func sorted(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	sort.Strings(out)
	return out
}

// The documented parameters and enums are the ones the handlers accept.
func TestOpenAPIParametersMatchTheHandlers(t *testing.T) {
	doc := loadDoc(t)
	ops := operations(doc)
	assert.Equal(t, sorted(filterParams, pageParams), queryParams(doc, ops["GET /api/v1/records"]))
	assert.Equal(t, sorted(slices.DeleteFunc(slices.Clone(filterParams), func(s string) bool { return s == "view" }), pageParams),
		queryParams(doc, ops["GET /api/v1/views/{view}"]))
	assert.Equal(t, sorted(filterParams), queryParams(doc, ops["GET /api/v1/count"]))
	assert.Equal(t, sorted(filterParams, []string{"by"}), queryParams(doc, ops["GET /api/v1/summary"]))
	assert.Equal(t, sorted(quarantineParams), queryParams(doc, ops["GET /api/v1/quarantine"]))
	assert.Equal(t, sorted(auditParams), queryParams(doc, ops["GET /api/v1/audit"]))
	assert.Equal(t, sorted(archiveRecordParams), queryParams(doc, ops["GET /api/v1/archive/{sweep}"]))

	for _, name := range OperatorCommands {
		assert.NotNil(t, ops["POST /api/v1/records/{id}/"+name], "%s has its own path", name)
	}
	for _, name := range BatchCommands {
		assert.NotNil(t, ops["POST /api/v1/batch/"+name], "batch %s has its own path", name)
	}
	enum := func(name string) []string {
		var out []string
		for _, v := range get(doc, "components", "schemas", name, "enum").([]any) {
			out = append(out, v.(string))
		}
		return out
	}
	var views, statuses, recs, kinds []string
	for _, v := range aggregate.Views {
		views = append(views, string(v))
	}
	for _, v := range aggregate.Statuses {
		statuses = append(statuses, string(v))
	}
	for _, v := range aggregate.Recoverabilities {
		recs = append(recs, string(v))
	}
	for _, v := range aggregate.FunctionKinds {
		kinds = append(kinds, string(v))
	}
	assert.Equal(t, views, enum("View"))
	assert.Equal(t, statuses, enum("Status"))
	assert.Equal(t, recs, enum("Recoverability"))
	assert.Equal(t, kinds, enum("FunctionKind"))
	var reasons []string
	for _, r := range quarantine.Reasons {
		reasons = append(reasons, string(r))
	}
	assert.Equal(t, reasons, enum("QuarantineReason"))
	var auditKinds []string
	for _, k := range api.AuditKinds {
		auditKinds = append(auditKinds, string(k))
	}
	assert.Equal(t, auditKinds, enum("AuditKind"))
}

// tagFields lists the JSON names of a struct's fields and those without
// omitempty or omitzero, which a decoder cannot tell from absent.
func tagFields(v any) (all, required []string) {
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			required = append(required, name)
		}
	}
	sort.Strings(all)
	sort.Strings(required)
	return all, required
}

// requestSchema is the JSON body schema of an operation.
func requestSchema(doc obj, op obj) obj {
	return deref(doc, get(op, "requestBody", "content", "application/json", "schema"))
}

// Each command's body has the aggregate command's fields plus the audit
// reason (and, for the prepares, the probe flag), requires the fields the
// aggregate requires, and refuses others.
func TestOpenAPICommandBodiesMatchTheAggregate(t *testing.T) {
	doc := loadDoc(t)
	ops := operations(doc)
	commands := map[string]aggregate.Command{
		aggregate.NamePrepareCompensation:      aggregate.PrepareCompensation{},
		aggregate.NameForcePrepareCompensation: aggregate.ForcePrepareCompensation{},
		aggregate.NameApplyRetrySpec:           aggregate.ApplyRetrySpec{},
		aggregate.NameMarkRecoverable:          aggregate.MarkRecoverable{},
		aggregate.NameChangeFunction:           aggregate.ChangeFunction{},
	}
	require.ElementsMatch(t, OperatorCommands, slices.Collect(func(yield func(string) bool) {
		for k := range commands {
			yield(k)
		}
	}), "a new operator command needs its body checked here")
	for _, name := range OperatorCommands {
		t.Run(name, func(t *testing.T) {
			op := ops["POST /api/v1/records/{id}/"+name]
			require.NotNil(t, op)
			body := requestSchema(doc, op)
			require.NotNil(t, body, "a typed JSON body")
			all, required := tagFields(commands[name])
			all = sorted(all, []string{"reason"})
			if name == aggregate.NamePrepareCompensation || name == aggregate.NameForcePrepareCompensation {
				all = sorted(all, []string{"probe"})
			}
			if slices.Contains(reasonRequired, name) {
				required = sorted(required, []string{"reason"})
			}
			assert.Equal(t, all, keys(body["properties"].(obj)), "the body's fields")
			var documented []string
			if body["required"] != nil {
				documented = strs(body["required"])
			}
			assert.Equal(t, required, documented, "the required fields")
			assert.Equal(t, false, body["additionalProperties"], "unknown fields are refused")
			assert.Equal(t, len(required) > 0, get(op, "requestBody", "required"),
				"a body without required fields may be left out")
		})
	}

	batch := requestSchema(doc, ops["POST /api/v1/batch/"+BatchCommands[0]])
	require.NotNil(t, batch, "a typed batch body")
	all, _ := tagFields(api.BatchRequest{})
	assert.Equal(t, all, keys(batch["properties"].(obj)), "the batch body's fields")
	assert.Equal(t, false, batch["additionalProperties"])
	filter := deref(doc, get(batch, "properties", "filter"))
	all, _ = tagFields(api.Filter{})
	assert.Equal(t, all, keys(filter["properties"].(obj)), "the batch filter's fields")
	assert.Equal(t, false, filter["additionalProperties"], "the batch decoder refuses unknown filter fields too")
}

// The document states the limits the server enforces and the responses
// that enforcing them gives.
func TestOpenAPIStatesTheLimits(t *testing.T) {
	doc := loadDoc(t)
	id := deref(doc, obj{"$ref": "#/components/parameters/id"})
	assert.Equal(t, float64(eventstore.MaxIDLength), get(id, "schema", "maxLength"), "record ids are at most 256 bytes")

	spec := deref(doc, obj{"$ref": "#/components/schemas/ApplyRetrySpecCommand"})
	assert.Equal(t, float64(1), get(spec, "properties", "executionTimeout", "minimum"), "the API refuses an execution timeout of 0")
	assert.Equal(t, float64(0), get(spec, "properties", "maxRetries", "minimum"))
	assert.Equal(t, float64(0), get(spec, "properties", "minBackoff", "minimum"))

	errSchema := deref(doc, obj{"$ref": "#/components/schemas/Error"})
	assert.Equal(t, []string{"code", "details", "message"}, keys(errSchema["properties"].(obj)))
	assert.Contains(t, str(get(doc, "components", "responses", "PayloadTooLargeError", "description")), fmt.Sprintf("%d KiB", MaxBodyBytes>>10))

	for key, op := range operations(doc) {
		responses := op["responses"].(obj)
		assert.Contains(t, responses, "405", "%s: a wrong method is answered 405", key)
		for code, r := range responses {
			if code[0] == '4' || code[0] == '5' {
				assert.Equal(t, "#/components/schemas/Error", str(get(deref(doc, r), "content", "application/json", "schema", "$ref")),
					"%s %s: errors are {code,message,details}", key, code)
			}
		}
		if !strings.HasPrefix(key, "POST ") {
			continue
		}
		for _, code := range []string{"400", "413", "415", "422"} {
			assert.Contains(t, responses, code, "%s: a body can be refused with %s", key, code)
		}
		if props, ok := requestSchema(doc, op)["properties"].(obj); ok {
			assert.Equal(t, float64(MaxReasonLength), get(props, "reason", "maxLength"), "%s: reason is at most 1024 bytes", key)
		}
	}
}

// goName is the Go name oapi-codegen gives a component name.
func goName(name string) string {
	var b strings.Builder
	for part := range strings.FieldsFuncSeq(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// Generated clients compile: no two components become the same Go type,
// and no component is named like the types generators derive from an
// operation (getRecord → GetRecordResponse, GetRecordParams,
// GetRecordJSONRequestBody, GetRecordRequestObject, ...).
func TestOpenAPINamesCannotCollide(t *testing.T) {
	doc := loadDoc(t)
	seen := map[string]string{}
	for _, kind := range []string{"schemas", "responses", "parameters", "requestBodies", "headers"} {
		c, _ := get(doc, "components", kind).(obj)
		for name := range c {
			where := kind + "/" + name
			n := goName(name)
			if prev, ok := seen[n]; ok {
				t.Errorf("%s and %s both become the Go type %s", prev, where, n)
			}
			seen[n] = where
			for _, suffix := range []string{"Response", "Request", "Params", "Body", "Object", "Headers"} {
				assert.False(t, strings.HasSuffix(n, suffix), "%s ends in %s, as the types generated for operations do", where, suffix)
			}
			assert.NotContains(t, n, "Params", "%s: generators name parameter types <Operation>Params<Name>", where)
		}
	}
	ids := map[string]string{}
	for key, op := range operations(doc) {
		id := str(op["operationId"])
		require.NotEmpty(t, id, "%s has an operationId", key)
		if prev, ok := ids[id]; ok {
			t.Errorf("%s and %s share the operationId %s", prev, key, id)
		}
		ids[id] = key
		if where, ok := seen[goName(id)]; ok {
			t.Errorf("operation %s is named as %s", id, where)
		}
	}
}

// Response schemas have the fields the server sends and require those it
// always sends, so that generated clients need no pointers for them.
func TestOpenAPIResponsesMatchTheServer(t *testing.T) {
	doc := loadDoc(t)
	for name, v := range map[string]any{
		"CommandResult":   api.CommandResponse{},
		"RecordView":      api.View{},
		"Count":           api.CountResponse{},
		"BatchResult":     api.BatchResult{},
		"BatchOutcome":    api.BatchOutcome{},
		"BatchStart":      api.BatchStart{},
		"BatchLine":       api.BatchLine{},
		"HistoryEntry":    api.HistoryEntry{},
		"HistoryEvent":    api.HistoryEvent{},
		"QuarantinePage":  api.QuarantinePage{},
		"QuarantineEntry": quarantine.Entry{},
		"AuditPage":       api.AuditPage{},
		"AuditEntry":      api.AuditEntry{},
		// Failure intelligence.
		"Rule":             api.Rule{},
		"RuleAudit":        api.RuleAudit{},
		"RuleList":         api.RuleList{},
		"RecordSchedule":   api.RecordSchedule{},
		"ScheduledRetry":   aggregate.ScheduledRetry{},
		"FingerprintGroup": api.FingerprintGroup{},
		// The archive.
		"ArchiveSweeps":        api.ArchiveSweeps{},
		"ArchiveSweep":         api.ArchiveSweep{},
		"ArchiveRecords":       api.ArchiveRecords{},
		"ArchivedRecord":       api.ArchivedRecord{},
		"ArchivedHistory":      api.ArchivedHistory{},
		"ArchiveRestore":       api.ArchiveRestoreRequest{},
		"ArchiveRestoreResult": api.ArchiveRestoreResult{},
		"RestoredRecord":       api.RestoredRecord{},
	} {
		schema := deref(doc, obj{"$ref": "#/components/schemas/" + name})
		require.NotNil(t, schema, name)
		all, required := tagFields(v)
		assert.Equal(t, all, keys(schema["properties"].(obj)), "%s: the fields", name)
		var documented []string
		if schema["required"] != nil {
			documented = strs(schema["required"])
		}
		assert.Equal(t, required, documented, "%s: the fields always sent", name)
	}
}
