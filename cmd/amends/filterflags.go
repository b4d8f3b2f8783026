package main

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
)

// filterFlags are the list filters as flags, plus --filter key=value.
type filterFlags struct {
	values map[string]*string
	extra  []string
	view   string
}

// filterFlagNames maps flag names to API filter names, in the order
// filters are described.
var filterFlagNames = [][2]string{
	{"id", "id"}, {"event-id", "eventId"}, {"aggregate-context", "aggregateContext"}, {"aggregate-type", "aggregateType"},
	{"aggregate-id", "aggregateId"}, {"function-context", "functionContext"}, {"processor", "processor"},
	{"function", "function"}, {"function-kind", "functionKind"}, {"status", "status"}, {"recoverable", "recoverable"},
	{"error-code", "errorCode"}, {"since", "executeAtFrom"}, {"until", "executeAtTo"},
	{"next-retry-since", "nextRetryAtFrom"}, {"next-retry-until", "nextRetryAtTo"}, {"min-retries", "minRetries"},
	{"fingerprint", "fingerprint"},
}

func (f *filterFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.values = map[string]*string{}
	for _, n := range filterFlagNames {
		f.values[n[1]] = fs.String(n[0], "", "only records whose "+n[1]+" is this")
	}
	fs.Lookup("since").Usage = "only records whose last outcome is at or after this time (RFC 3339 or epoch ms)"
	fs.Lookup("until").Usage = "only records whose last outcome is before this time (RFC 3339 or epoch ms)"
	fs.Lookup("next-retry-since").Usage = "only records whose next retry (nextRetryAt) is at or after this time (RFC 3339 or epoch ms)"
	fs.Lookup("next-retry-until").Usage = "only records whose next retry (nextRetryAt) is before this time (RFC 3339 or epoch ms)"
	fs.Lookup("min-retries").Usage = "only records with at least this many retries"
	fs.Lookup("status").Usage = "only records of this status: FAILED, PREPARED or SUCCEEDED"
	fs.Lookup("recoverable").Usage = "only records of this classification: RECOVERABLE, UNRECOVERABLE or UNKNOWN"
	fs.Lookup("function-kind").Usage = "only records whose function is of this kind: COMMAND, SOURCING, EVENT, STATE_EVENT or ERROR"
	fs.StringArrayVar(&f.extra, "filter", nil, "a filter as key=value with the API's names (e.g. processor=Mailer); repeatable")
	fs.StringVar(&f.view, "view", "", "only records of this view: to-retry (waiting: the scheduler retries each when it is due; alias waiting), "+
		"next-retry (due now: what the scheduler prepares next; alias due), executing (a replay running), non-retryable (every retry used), succeeded, unrecoverable")
}

// params checks the filters and returns them as API query parameters
// (without the view). A bad value is a usage error naming the flag.
func (f *filterFlags) params() (url.Values, error) {
	v := url.Values{}
	for _, n := range filterFlagNames {
		if val := *f.values[n[1]]; val != "" {
			if err := checkFilter(n[1], val); err != nil {
				return nil, usageErrorf("--%s %s", n[0], err)
			}
			v.Set(n[1], val)
		}
	}
	for _, kv := range f.extra {
		if err := f.addExtra(v, kv); err != nil {
			return nil, err
		}
	}
	if err := checkTimeRanges(v); err != nil {
		return nil, err
	}
	if alias, ok := viewAliases[f.view]; ok {
		f.view = string(alias)
	}
	if f.view != "" {
		if _, err := aggregate.ParseView(f.view); err != nil {
			return nil, usageErrorf("--view must be one of %s, got %s", joinViews(), quoteShort(f.view))
		}
	}
	return v, nil
}

// active reports whether any filter or a view is set (after params).
func (f *filterFlags) active(params url.Values) bool { return len(params) > 0 || f.view != "" }

// filter returns checked params (from params) and the view as the API's
// filter. Values params holds passed checkFilter, so they parse.
func (f *filterFlags) filter(params url.Values) api.Filter {
	ff := api.Filter{
		ID: params.Get("id"), EventID: params.Get("eventId"),
		AggregateContext: params.Get("aggregateContext"), AggregateType: params.Get("aggregateType"), AggregateID: params.Get("aggregateId"),
		FunctionContext: params.Get("functionContext"), Processor: params.Get("processor"), Function: params.Get("function"),
		ErrorCode: params.Get("errorCode"), Fingerprint: params.Get("fingerprint"),
	}
	if v := params.Get("functionKind"); v != "" {
		ff.FunctionKind, _ = aggregate.ParseFunctionKind(v)
	}
	if v := params.Get("status"); v != "" {
		ff.Status, _ = aggregate.ParseStatus(v)
	}
	if v := params.Get("recoverable"); v != "" {
		ff.Recoverable, _ = aggregate.ParseRecoverability(v)
	}
	if v := params.Get("executeAtFrom"); v != "" {
		ff.ExecuteAtFrom, _ = parseTimeFlag(v)
	}
	if v := params.Get("executeAtTo"); v != "" {
		ff.ExecuteAtTo, _ = parseTimeFlag(v)
	}
	if v := params.Get("nextRetryAtFrom"); v != "" {
		ff.NextRetryAtFrom, _ = parseTimeFlag(v)
	}
	if v := params.Get("nextRetryAtTo"); v != "" {
		ff.NextRetryAtTo, _ = parseTimeFlag(v)
	}
	if v := params.Get("minRetries"); v != "" {
		n, _ := strconv.ParseInt(v, 10, 32)
		ff.MinRetries = int32(n)
	}
	if f.view != "" {
		ff.View, _ = aggregate.ParseView(f.view)
	}
	return ff
}

// describe names the active filters as the user gave them, for table
// output: "processor=Mailer, view=to-retry"; "" if none.
func (f *filterFlags) describe(params url.Values) string {
	var parts []string
	for _, n := range filterFlagNames {
		if val := params.Get(n[1]); val != "" {
			parts = append(parts, n[0]+"="+val)
		}
	}
	if f.view != "" {
		parts = append(parts, "view="+f.view)
	}
	return strings.Join(parts, ", ")
}

func isFilterName(k string) bool {
	for _, n := range filterFlagNames {
		if n[1] == k {
			return true
		}
	}
	return k == "view"
}

func filterNames() []string {
	names := make([]string, 0, len(filterFlagNames)+1)
	for _, n := range filterFlagNames {
		names = append(names, n[1])
	}
	return append(names, "view")
}

// viewAliases are the names an operator may guess for the views whose
// wire names (Wow's) read alike: to-retry holds the records waiting for a
// retry, next-retry those whose retry is due now.
var viewAliases = map[string]aggregate.View{"waiting": aggregate.ViewToRetry, "due": aggregate.ViewNextRetry}

func joinViews() string {
	names := make([]string, len(aggregate.Views))
	for i, v := range aggregate.Views {
		names[i] = string(v)
	}
	return strings.Join(names, ", ") + " (or waiting, due)"
}

// checkFilter checks the value of the API filter name; the error completes
// "--flag ".
func checkFilter(name, val string) error {
	switch name {
	case "status":
		return checkEnum(val, aggregate.Statuses)
	case "recoverable":
		return checkEnum(val, aggregate.Recoverabilities)
	case "functionKind":
		return checkEnum(val, aggregate.FunctionKinds)
	case "executeAtFrom", "executeAtTo", "nextRetryAtFrom", "nextRetryAtTo":
		if _, err := parseTimeFlag(val); err != nil {
			return err
		}
	case "minRetries":
		if n, err := strconv.ParseInt(val, 10, 32); err != nil || n < 0 {
			return fmt.Errorf("must be a whole number from 0 to %d, got %s", int32(^uint32(0)>>1), quoteShort(val))
		}
	}
	if (name == "id" || name == "eventId" || name == "aggregateId") && len(val) > eventstore.MaxIDLength {
		return fmt.Errorf("is %d bytes, over the limit of %d", len(val), eventstore.MaxIDLength)
	}
	if !utf8.ValidString(val) {
		return fmt.Errorf("is not valid UTF-8: %s", quoteShort(val))
	}
	return nil
}

func checkEnum[T ~string](val string, values []T) error {
	names := make([]string, len(values))
	for i, v := range values {
		if strings.EqualFold(val, string(v)) {
			return nil
		}
		names[i] = string(v)
	}
	return fmt.Errorf("must be one of %s, got %s", strings.Join(names, ", "), quoteShort(val))
}

// parseTimeFlag reads an RFC 3339 time or epoch milliseconds, as the API
// does.
func parseTimeFlag(v string) (time.Time, error) {
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("must be an RFC 3339 time (2026-11-30T08:00:00Z) or epoch milliseconds, got %s", quoteShort(v))
	}
	return t, nil
}

// quoteShort quotes s, cut to 40 bytes, so that a huge value does not
// flood the terminal.
func quoteShort(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", s[:40], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// addExtra adds --filter kv (key=value) to v, or to the view.
func (f *filterFlags) addExtra(v url.Values, kv string) error {
	k, val, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return usageErrorf("--filter %s: want key=value, such as processor=Mailer", quoteShort(kv))
	}
	if !isFilterName(k) {
		return usageErrorf("--filter %s: unknown filter %s; the filters are %s", quoteShort(kv), quoteShort(k), strings.Join(filterNames(), ", "))
	}
	if k == "view" {
		if f.view != "" && f.view != val {
			return usageErrorf("--filter view=%s and --view %s disagree; give one", val, f.view)
		}
		f.view = val
		return nil
	}
	if err := checkFilter(k, val); err != nil {
		return usageErrorf("--filter %s %s", k, err)
	}
	if prev := v.Get(k); prev != "" && prev != val {
		return usageErrorf("--filter %s=%s and %s disagree; give one", k, quoteShort(val), quoteShort(prev))
	}
	v.Set(k, val)
	return nil
}

// checkTimeRanges refuses a time range of v that ends before it begins.
func checkTimeRanges(v url.Values) error {
	for _, r := range [][4]string{{"executeAtFrom", "executeAtTo", "--since", "--until"}, {"nextRetryAtFrom", "nextRetryAtTo", "--next-retry-since", "--next-retry-until"}} {
		if from, to := v.Get(r[0]), v.Get(r[1]); from != "" && to != "" {
			a, _ := parseTimeFlag(from)
			b, _ := parseTimeFlag(to)
			if !a.Before(b) {
				return usageErrorf("%s %s is not before %s %s: no record could match", r[2], from, r[3], to)
			}
		}
	}
	return nil
}
