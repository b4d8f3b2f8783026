package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/client"
)

// clientFlags are the flags of every command that talks to the API.
type clientFlags struct {
	server string
	token  string
	output string
}

func (f *clientFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.server, "server", "http://127.0.0.1:8080", "address of amends serve's HTTP API")
	fs.StringVar(&f.token, "token", "", "bearer token (prefer the AMENDS_TOKEN variable: flags show in process lists)")
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
}

func (f *clientFlags) client() (*client.Client, error) {
	if f.output != "table" && f.output != "json" {
		return nil, usageErrorf("--output must be table or json, got %q", f.output)
	}
	c, err := client.New(f.server, f.token, nil)
	if err != nil {
		return nil, usageErrorf("--server: %v", err)
	}
	return c, nil
}

// apiError turns an API error into the command line's message.
func apiError(id string, err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		switch {
		case ce.Body.Code == "NotFound" && id != "" && ce.Status == 404 && strings.HasPrefix(ce.Body.Message, "no ExecutionFailed record"):
			return fmt.Errorf("no ExecutionFailed record with id %s; list records with `amends list`", id)
		case ce.Status == 401:
			return fmt.Errorf("%s (set AMENDS_TOKEN)", ce.Body.Message)
		}
		return errors.New(ce.Body.Message)
	}
	return err
}

// filterFlags are the list filters as flags, plus --filter key=value.
type filterFlags struct {
	values map[string]*string
	extra  []string
	view   string
}

// filterFlagNames maps flag names to API filter names.
var filterFlagNames = [][2]string{
	{"id", "id"}, {"event-id", "eventId"}, {"aggregate-context", "aggregateContext"}, {"aggregate-type", "aggregateType"},
	{"aggregate-id", "aggregateId"}, {"function-context", "functionContext"}, {"processor", "processor"},
	{"function", "function"}, {"function-kind", "functionKind"}, {"status", "status"}, {"recoverable", "recoverable"},
	{"error-code", "errorCode"}, {"since", "executeAtFrom"}, {"until", "executeAtTo"}, {"min-retries", "minRetries"},
}

func (f *filterFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	f.values = map[string]*string{}
	for _, n := range filterFlagNames {
		f.values[n[1]] = fs.String(n[0], "", "only records whose "+n[1]+" is this")
	}
	fs.Lookup("since").Usage = "only records whose last outcome is at or after this time (RFC 3339 or epoch ms)"
	fs.Lookup("until").Usage = "only records whose last outcome is before this time (RFC 3339 or epoch ms)"
	fs.Lookup("min-retries").Usage = "only records with at least this many retries"
	fs.StringArrayVar(&f.extra, "filter", nil, "a filter as key=value with the API's names (e.g. processor=Mailer); repeatable")
	fs.StringVar(&f.view, "view", "", "only records of this view: to-retry, executing, next-retry, non-retryable, succeeded, unrecoverable")
}

// params returns the filters as API query parameters, and whether any is set.
func (f *filterFlags) params() (url.Values, error) {
	v := url.Values{}
	for name, val := range f.values {
		if *val != "" {
			v.Set(name, *val)
		}
	}
	for _, kv := range f.extra {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--filter %q: want key=value, such as processor=Mailer", kv)
		}
		v.Set(k, val)
	}
	return v, nil
}
