package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amends-dev/amends/notify"
)

const notifyLong = `Notify checks the notification setup of amends serve.

  amends notify test ENDPOINT   sends a signed test notification to the
                                endpoint named ENDPOINT in --notify-config
                                (or "default" with --notify-url), through
                                the SSRF guard, and prints the answer.
  amends notify verify          checks the signature of a captured request.

The scheme is in docs/notifications.md.`

func newNotifyCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "notify",
		Short: "Send a test notification, or verify a captured one",
		Long:  notifyLong,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(a.stderr, cmd.UsageString())
			return usageErrorf("a subcommand is required: test or verify")
		},
	}
	cmd.AddCommand(newNotifyTestCmd(a), newNotifyVerifyCmd(a))
	return cmd
}

func newNotifyTestCmd(a *app) *cobra.Command {
	var f notifyFlags
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "test ENDPOINT",
		Short: "Send a signed test notification to an endpoint and print its answer",
		Long: `Test sends one signed notification of type "test" to the endpoint named
ENDPOINT, with the endpoint's secrets, format and success range, through the
same SSRF guard as serve (so --notify-allow-host or the file's allowHosts
must list a private or loopback receiver), without dedup or retries. It
prints the notification id, the answer's status and the start of its
body, and exits 1 if the status is outside the endpoint's success range.

` + notifyHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("want one argument, the endpoint's name (\"default\" with --notify-url), got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.config(cmd.Flags(), a.lookupEnv)
			if err != nil {
				return err
			}
			if cfg == nil {
				return usageErrorf("set --notify-config or --notify-url")
			}
			if _, ok := cfg.Endpoint(args[0]); !ok {
				names := make([]string, 0, len(cfg.Endpoints))
				for _, e := range cfg.Endpoints {
					names = append(names, e.Name)
				}
				return usageErrorf("no endpoint is named %q; the endpoints are %s", args[0], strings.Join(names, ", "))
			}
			n, err := notify.New(nil, nil, nil, cfg, notify.WithLogger(a.logger))
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel func()
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			note, resp, err := n.Send(ctx, args[0])
			if resp.Status != 0 {
				fmt.Fprintf(a.stdout, "notification %s to %s: HTTP %d %s\n", note.ID, args[0], resp.Status, http.StatusText(resp.Status))
				if len(resp.Body) > 0 {
					fmt.Fprintf(a.stdout, "%s\n", bytes.TrimRight(resp.Body, "\n"))
				}
			}
			if err != nil {
				return fmt.Errorf("%s", strings.TrimSuffix(strings.TrimSuffix(err.Error(), ": "+notify.ErrDelivery.Error()), ": "+notify.ErrRefused.Error()))
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	f.add(fs)
	fs.DurationVar(&timeout, "timeout", 0, "bound the whole test (0: the endpoint's timeout)")
	annotateEnv(fs)
	return cmd
}

// maxCapture bounds a captured request read by verify.
const maxCapture = 2 << 20

func newNotifyVerifyCmd(a *app) *cobra.Command {
	var (
		request    string
		secretEnv  []string
		secretFile []string
		tolerance  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Verify the signature of a captured notification request",
		Long: `Verify reads a captured HTTP/1.1 request (request line, headers, blank line,
body; as "nc -l PORT > request.txt" saves it) from --request FILE, or "-"
for standard input, and checks it as a receiver must: the body's SHA-256
equals Amends-Body-Sha256, Amends-Timestamp is within --tolerance of now,
and one signature in Amends-Signature is the HMAC-SHA256 of the method,
path, query, timestamp, event id and body hash with one of the secrets
(--secret-env NAME or --secret-file FILE, up to two). It prints "valid"
and exits 0, or says which check failed and exits 1.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if request == "" {
				return usageErrorf("--request is required: the file of the captured request, or - for standard input")
			}
			if len(secretEnv)+len(secretFile) == 0 {
				return usageErrorf("a secret is required: --secret-env NAME or --secret-file FILE")
			}
			if len(secretEnv)+len(secretFile) > 2 {
				return usageErrorf("at most two secrets (--secret-env and --secret-file together), got %d", len(secretEnv)+len(secretFile))
			}
			if tolerance <= 0 || tolerance > 24*time.Hour {
				return usageErrorf("--tolerance %s must be above 0 and at most 24h", tolerance)
			}
			secrets, err := verifySecrets(secretEnv, secretFile, a.lookupEnv)
			if err != nil {
				return err
			}
			var in io.Reader = os.Stdin
			if request != "-" {
				f, err := os.Open(request)
				if err != nil {
					return usageErrorf("--request: %v", errors.Unwrap(err))
				}
				defer f.Close()
				in = f
			}
			req, body, err := readCapture(in)
			if err != nil {
				return fmt.Errorf("--request %s: %v", request, err)
			}
			if err := notify.VerifyRequest(req, body, secrets, a.now(), tolerance); err != nil {
				return fmt.Errorf("invalid: %s", strings.TrimSuffix(err.Error(), ": "+notify.ErrBadSignature.Error()))
			}
			fmt.Fprintf(a.stdout, "valid: event %s (%s)", req.Header.Get(notify.HeaderEventID), req.Header.Get(notify.HeaderEventType))
			if id := req.Header.Get(notify.HeaderRecordID); id != "" {
				fmt.Fprintf(a.stdout, ", record %s", id)
			}
			fmt.Fprintln(a.stdout)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&request, "request", "", "file of the captured request, or - for standard input")
	fs.StringSliceVar(&secretEnv, "secret-env", nil, "environment variable holding a secret (repeatable, up to two secrets in all)")
	fs.StringSliceVar(&secretFile, "secret-file", nil, "file holding a secret (repeatable, up to two secrets in all)")
	fs.DurationVar(&tolerance, "tolerance", notify.DefaultTolerance, "how far the request's timestamp may be from now")
	return cmd
}

func verifySecrets(envs, files []string, lookup func(string) (string, bool)) ([][]byte, error) {
	var out [][]byte
	for _, e := range envs {
		v, ok := lookup(e)
		if !ok || v == "" {
			return nil, usageErrorf("--secret-env: the variable %s is not set", e)
		}
		out = append(out, []byte(v))
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, usageErrorf("--secret-file: cannot read %s", p)
		}
		if len(data) > notify.MaxSecretLength+2 {
			return nil, usageErrorf("--secret-file %s: longer than %d bytes", p, notify.MaxSecretLength)
		}
		out = append(out, bytes.TrimRight(data, "\r\n"))
	}
	return out, nil
}

// readCapture parses a captured request and reads its body (at most 2 MiB).
func readCapture(in io.Reader) (*http.Request, []byte, error) {
	br := bufio.NewReader(io.LimitReader(in, maxCapture+1))
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, nil, fmt.Errorf("not an HTTP/1.1 request: %v", err)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("the body is cut short: %v", err)
	}
	if len(body) >= maxCapture {
		return nil, nil, fmt.Errorf("larger than the limit of %d bytes", maxCapture)
	}
	return req, body, nil
}
