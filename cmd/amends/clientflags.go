package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/client"
)

// clientFlags are the flags of every command that talks to the API.
type clientFlags struct {
	server  string
	token   string
	output  string
	timeout time.Duration
}

// add adds the flags to cmd; only --server, --token and --timeout may come
// from the environment. Before cmd runs, it warns about the variables of
// its other flags, which are ignored, and checks these flags.
func (f *clientFlags) add(a *app, cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.server, "server", "http://127.0.0.1:8080", "address of amends serve's HTTP API")
	fs.StringVar(&f.token, "token", "", "bearer token (prefer the AMENDS_TOKEN variable: flags show in process lists)")
	fs.StringVarP(&f.output, "output", "o", "table", "output format: table or json")
	fs.DurationVar(&f.timeout, "timeout", client.DefaultTimeout, "how long to wait for the server's answer; for a batch, for each line of its progress")
	allowEnv(fs, "server", "token", "timeout")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		warnIgnoredEnv(a.stderr, cmd.Flags(), a.lookupEnv)
		// Every request of this run carries one trace (see cliTrace).
		cmd.SetContext(cliTrace(cmd.Context()))
		return f.check()
	}
}

// check validates the flags as usage errors.
func (f *clientFlags) check() error {
	if err := checkOutput(f.output); err != nil {
		return err
	}
	if f.timeout <= 0 {
		return usageErrorf("--timeout must be positive, such as 30s or 2m, got %s", f.timeout)
	}
	if _, err := client.New(f.server, f.token, nil); err != nil {
		return usageErrorf("--server: %v", err)
	}
	return nil
}

// client returns the API client; idle is the idle timeout of batches (0:
// --timeout).
func (f *clientFlags) client(idle time.Duration) (*client.Client, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	if idle < f.timeout {
		idle = f.timeout
	}
	c, err := client.New(f.server, f.token, nil, client.WithTimeout(f.timeout), client.WithIdleTimeout(idle))
	if err != nil {
		return nil, usageErrorf("--server: %v", err)
	}
	return c, nil
}

// apiFlags maps the API's field names to the flags that set them.
var apiFlags = func() map[string]string {
	m := map[string]string{
		"limit": "limit", "cursor": "cursor", "sort": "sort", "order": "desc", "view": "view",
		"reason": "reason", "ratePerSecond": "rate", "requestId": "request-id",
		"maxRetries": "max-retries", "minBackoff": "min-backoff", "executionTimeout": "execution-timeout",
		"contextName": "context", "processorName": "processor", "functionKind": "kind",
	}
	for _, n := range filterFlagNames {
		if _, ok := m[n[1]]; !ok {
			m[n[1]] = n[0]
		}
	}
	return m
}()

// apiError turns an error of the client into the command line's message.
// An error the server gives a field that one of cmd's flags set becomes a
// usage error naming that flag, not the API's name for it.
func apiError(cmd *cobra.Command, id string, err error) error {
	if errors.Is(err, client.ErrTimeout) {
		return fmt.Errorf("%v; raise --timeout or check the server", err)
	}
	var ce *client.Error
	if !errors.As(err, &ce) {
		return err
	}
	switch {
	case ce.Body.Code == "NotFound" && id != "" && ce.Status == 404 && strings.HasPrefix(ce.Body.Message, "no ExecutionFailed record"):
		return notFound{fmt.Errorf("no ExecutionFailed record with id %s; list records with `amends list`", id)}
	case ce.Body.Code == "NotFound" && ce.Status == 404:
		return notFound{errors.New(ce.Body.Message)}
	case ce.Status == 401:
		return unauthenticated{fmt.Errorf("%s (set AMENDS_TOKEN)", ce.Body.Message)}
	}
	if flag := fieldFlag(cmd, ce.Body.Details); flag != "" && ce.Status >= 400 && ce.Status < 500 {
		field, _ := ce.Body.Details["field"].(string)
		return usageError{errors.New(nameFlag(ce.Body.Message, lastSegment(field), flag))}
	}
	if ce.Status == 409 {
		if why := refusalDetails(ce); why != "" {
			return fmt.Errorf("%s %s", ce.Body.Message, why)
		}
	}
	return errors.New(ce.Body.Message)
}

// cliCommands maps the wire names of operator commands to their
// subcommands.
var cliCommands = map[api.Command]string{
	api.CommandPrepare:         "prepare",
	api.CommandForcePrepare:    "force-prepare",
	api.CommandApplyRetrySpec:  "retry-spec",
	api.CommandMarkRecoverable: "mark-recoverable",
	api.CommandChangeFunction:  "change-function",
}

// refusalDetails says what a refused command's details tell an operator:
// the record's status and retries, and the command that would be accepted
// ("(status FAILED, retries 10/10, recoverable UNKNOWN; force-prepare
// would be accepted)"). It returns "" for details without a status.
func refusalDetails(ce *client.Error) string {
	status := ce.String("status")
	if status == "" {
		return ""
	}
	parts := []string{"status " + status}
	if r, ok := ce.Int("retries"); ok {
		if m, ok := ce.Int("maxRetries"); ok {
			parts = append(parts, fmt.Sprintf("retries %d/%d", r, m))
		}
	}
	if rec := ce.String("recoverable"); rec != "" {
		parts = append(parts, "recoverable "+rec)
	}
	if t, ok := ce.Time("timeoutAt"); ok && t.UnixMilli() > 0 && status == "PREPARED" {
		parts = append(parts, "times out at "+t.UTC().Format(time.RFC3339))
	}
	out := "(" + strings.Join(parts, ", ")
	var accepted []string
	for _, name := range ce.Accepted() {
		if sub, ok := cliCommands[api.Command(name)]; ok {
			name = sub
		}
		accepted = append(accepted, "amends "+name)
	}
	if len(accepted) > 0 {
		out += "; " + strings.Join(accepted, " or ") + " would be accepted"
	}
	return out + ")"
}

// fieldFlag returns the flag of cmd that sets details' "field", if the
// user set it.
func fieldFlag(cmd *cobra.Command, details map[string]any) string {
	field, _ := details["field"].(string)
	name, ok := apiFlags[lastSegment(field)]
	if !ok || cmd == nil {
		return ""
	}
	if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
		return name
	}
	return ""
}

func lastSegment(field string) string { return field[strings.LastIndex(field, ".")+1:] }

// nameFlag puts --flag in place of the API's name field that starts msg
// ("executeAtFrom must be ..."), or in front of msg.
func nameFlag(msg, field, flag string) string {
	if rest, ok := strings.CutPrefix(msg, field+" "); ok {
		return "--" + flag + " " + rest
	}
	return "--" + flag + ": " + msg
}

// checkOutput checks --output: table or json.
func checkOutput(o string) error {
	if o != "table" && o != "json" {
		return usageErrorf("--output must be table or json, got %q", clipText(o, 40))
	}
	return nil
}
