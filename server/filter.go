package server

import (
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
)

// filterParams are the query parameters of a projection.Filter.
var filterParams = []string{
	"id", "idPrefix", "eventId", "aggregateContext", "aggregateType", "aggregateId",
	"functionContext", "processor", "function", "functionKind",
	"status", "recoverable", "errorCode", "executeAtFrom", "executeAtTo", "nextRetryAtFrom", "nextRetryAtTo", "minRetries", "view",
	"fingerprint",
}

// pageParams are the query parameters of a list page.
var pageParams = []string{"sort", "order", "limit", "cursor"}

// ParseFilter reads a filter from the list's query parameters (the API's
// filter names, e.g. processor=Mailer&status=FAILED&view=to-retry), with
// the API's rules; the error names the parameter.
func ParseFilter(q url.Values) (api.Filter, error) { return parseFilter(q) }

// parseFilter reads a filter from query parameters. Parameters outside
// allowed are an error naming them, so a typo is not silently ignored.
func parseFilter(q url.Values, allowed ...[]string) (api.Filter, error) {
	if err := checkFilterParams(q, allowed...); err != nil {
		return api.Filter{}, err
	}
	f := api.Filter{
		ID: q.Get("id"), IDPrefix: q.Get("idPrefix"), EventID: q.Get("eventId"),
		AggregateContext: q.Get("aggregateContext"), AggregateType: q.Get("aggregateType"), AggregateID: q.Get("aggregateId"),
		FunctionContext: q.Get("functionContext"), Processor: q.Get("processor"), Function: q.Get("function"),
		ErrorCode: q.Get("errorCode"), Fingerprint: q.Get("fingerprint"),
	}
	if v := f.IDPrefix; v != "" && len(v) < api.MinIDPrefix {
		return f, badRequest("idPrefix", "idPrefix must have at least %d characters, got %s", api.MinIDPrefix, quote(v))
	}
	if err := parseFilterEnums(q, &f); err != nil {
		return f, err
	}
	return f, parseFilterNumbers(q, &f)
}

// checkFilterParams refuses a query parameter that is neither a filter
// nor allowed, given twice, or not text within its limit.
func checkFilterParams(q url.Values, allowed ...[]string) error {
	ok := map[string]bool{}
	for _, list := range append(allowed, filterParams) {
		for _, p := range list {
			ok[p] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !ok[k] {
			return badRequest(fieldName(k, "query"), "unknown query parameter %s; the filters are %s", quote(k), strings.Join(filterParams, ", "))
		}
		if n := len(q[k]); n > 1 {
			return badRequest(k, "query parameter %s is given %d times; give it once", k, n)
		}
		limit := MaxParamBytes
		if k == "id" || k == "idPrefix" {
			limit = MaxIDBytes
		}
		if ae := checkText(k, q.Get(k), limit); ae != nil {
			return ae
		}
	}
	return nil
}

// parseFilterEnums reads the filter's function kind, status,
// recoverability and view.
func parseFilterEnums(q url.Values, f *api.Filter) error {
	var err error
	if v := q.Get("functionKind"); v != "" {
		if f.FunctionKind, err = aggregate.ParseFunctionKind(v); err != nil {
			return badRequest("functionKind", "%v", err)
		}
	}
	if v := q.Get("status"); v != "" {
		if f.Status, err = aggregate.ParseStatus(v); err != nil {
			return badRequest("status", "%v", err)
		}
	}
	if v := q.Get("recoverable"); v != "" {
		if f.Recoverable, err = aggregate.ParseRecoverability(v); err != nil {
			return badRequest("recoverable", "%v", err)
		}
	}
	if v := q.Get("view"); v != "" {
		if f.View, err = parseView(v); err != nil {
			return err
		}
	}
	return nil
}

// parseFilterNumbers reads the filter's time ranges and minimum retries.
func parseFilterNumbers(q url.Values, f *api.Filter) error {
	var err error
	if f.ExecuteAtFrom, err = parseTime(q, "executeAtFrom"); err != nil {
		return err
	}
	if f.ExecuteAtTo, err = parseTime(q, "executeAtTo"); err != nil {
		return err
	}
	if f.NextRetryAtFrom, err = parseTime(q, "nextRetryAtFrom"); err != nil {
		return err
	}
	if f.NextRetryAtTo, err = parseTime(q, "nextRetryAtTo"); err != nil {
		return err
	}
	if v := q.Get("minRetries"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return badRequest("minRetries", "minRetries must be a whole number from 0 to %d, got %s", math.MaxInt32, quote(v))
		}
		f.MinRetries = int32(n)
	}
	return nil
}

// parseTime reads an RFC 3339 time or epoch milliseconds.
func parseTime(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, badRequest(name, "%s must be an RFC 3339 time (2026-11-30T08:00:00Z) or epoch milliseconds, got %s", name, quote(v))
	}
	return t, nil
}

// queryValues parses a request's query string. A malformed one (a bad
// escape, a semicolon) is refused rather than read in part.
func queryValues(r *http.Request) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest("query", "the query string is malformed: %s; escape values with percent-encoding", cut(strings.TrimPrefix(err.Error(), "invalid ")))
	}
	return q, nil
}

// requestFilter reads the filter of a count or summary request.
func requestFilter(r *http.Request) (api.Filter, error) {
	q, err := queryValues(r)
	if err != nil {
		return api.Filter{}, err
	}
	return parseFilter(q)
}

// parseQuery reads a list request.
func parseQuery(r *http.Request) (api.Query, error) {
	q, err := queryValues(r)
	if err != nil {
		return api.Query{}, err
	}
	f, err := parseFilter(q, pageParams)
	if err != nil {
		return api.Query{}, err
	}
	pq := api.Query{Filter: f, Cursor: q.Get("cursor"), Sort: api.Sort{Field: api.SortField(q.Get("sort"))}}
	if pq.Sort.Field != "" && !slices.Contains(api.SortFields, pq.Sort.Field) {
		return pq, badRequest("sort", "sort must be one of %s, got %s", joinSortFields(), quote(string(pq.Sort.Field)))
	}
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		pq.Sort.Desc = true
	default:
		return pq, badRequest("order", "order must be asc or desc, got %s", quote(q.Get("order")))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || !bounds.Within(n, 1, api.MaxLimit) {
			return pq, badRequest("limit", "limit must be a whole number from 1 to %d, got %s", api.MaxLimit, quote(v))
		}
		pq.Limit = n
	}
	return pq, nil
}

func joinSortFields() string {
	names := make([]string, len(api.SortFields))
	for i, f := range api.SortFields {
		names[i] = string(f)
	}
	return strings.Join(names, ", ")
}

// parseView reads a view's name; the error lists the views.
func parseView(s string) (aggregate.View, error) {
	v, err := aggregate.ParseView(s)
	if err != nil {
		names := make([]string, len(aggregate.Views))
		for i, v := range aggregate.Views {
			names[i] = string(v)
		}
		return "", badRequest("view", "unknown view %s; the views are %s", quote(s), strings.Join(names, ", "))
	}
	return v, nil
}
