package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// hostileCase is one hostile command line: what it must exit with and
// say. A usage error (exit 2) must reach no server at all; a failure
// (exit 1) may ask the server, but nothing may be written.
type hostileCase struct {
	name string
	args []string
	env  map[string]string
	code int
	want string
}

func TestHostileInputPerSubcommand(t *testing.T) {
	e := newAPIEnv(t)
	id := e.create(t, 1)
	done := e.create(t, 2)
	e.succeed(t, done)
	long := strings.Repeat("x", 300)
	huge := strings.Repeat("r", 5000)

	tables := map[string][]hostileCase{
		"list": {
			{"limit 0", []string{"list", "--limit", "0"}, nil, exitUsage, "--limit must be from 1 to 1000, got 0"},
			{"limit too big", []string{"list", "--limit", "1001"}, nil, exitUsage, "--limit must be from 1 to 1000, got 1001"},
			{"limit negative", []string{"list", "--limit", "-3"}, nil, exitUsage, "--limit must be from 1 to 1000, got -3"},
			{"limit not a number", []string{"list", "--limit", "many"}, nil, exitUsage, `invalid argument "many" for "--limit" flag`},
			{"limit overflows", []string{"list", "--limit", "99999999999999999999"}, nil, exitUsage, `invalid argument "99999999999999999999" for "--limit" flag: the number is out of range`},
			{"limit not a number, no Go names", []string{"list", "--limit", "ten"}, nil, exitUsage, `invalid argument "ten" for "--limit" flag: want a whole number` + "\n"},
			{"timeout not a duration", []string{"list", "--timeout", "soon"}, nil, exitUsage, `invalid argument "soon" for "--timeout" flag: want a duration such as 30s, 5m or 1h` + "\n"},
			{"bool flag", []string{"list", "--all=maybe"}, nil, exitUsage, `invalid argument "maybe" for "--all" flag: want true or false` + "\n"},
			{"view", []string{"list", "--view", "bogus"}, nil, exitUsage, `--view must be one of to-retry, executing, next-retry, non-retryable, succeeded, unrecoverable (or waiting, due), got "bogus"`},
			{"view by filter", []string{"list", "--filter", "view=bogus"}, nil, exitUsage, `--view must be one of`},
			{"views disagree", []string{"list", "--filter", "view=succeeded", "--view", "to-retry"}, nil, exitUsage, "--filter view=succeeded and --view to-retry disagree"},
			{"status", []string{"list", "--status", "DONE"}, nil, exitUsage, `--status must be one of FAILED, PREPARED, SUCCEEDED, got "DONE"`},
			{"recoverable", []string{"list", "--recoverable", "maybe"}, nil, exitUsage, `--recoverable must be one of RECOVERABLE, UNRECOVERABLE, UNKNOWN, got "maybe"`},
			{"function kind", []string{"list", "--function-kind", "LAMBDA"}, nil, exitUsage, `--function-kind must be one of COMMAND, SOURCING, EVENT, STATE_EVENT, ERROR, got "LAMBDA"`},
			{"since", []string{"list", "--since", "yesterday"}, nil, exitUsage, `--since must be an RFC 3339 time (2026-11-30T08:00:00Z) or epoch milliseconds, got "yesterday"`},
			{"until", []string{"list", "--until", "2026-13-01"}, nil, exitUsage, `--until must be an RFC 3339 time`},
			{"since after until", []string{"list", "--since", "2026-02-01T00:00:00Z", "--until", "2026-01-01T00:00:00Z"}, nil, exitUsage, "--since 2026-02-01T00:00:00Z is not before --until 2026-01-01T00:00:00Z"},
			{"next retry since", []string{"list", "--next-retry-since", "tomorrow"}, nil, exitUsage, `--next-retry-since must be an RFC 3339 time (2026-11-30T08:00:00Z) or epoch milliseconds, got "tomorrow"`},
			{"next retry since after until", []string{"list", "--next-retry-since", "2026-02-01T00:00:00Z", "--next-retry-until", "2026-01-01T00:00:00Z"}, nil, exitUsage, "--next-retry-since 2026-02-01T00:00:00Z is not before --next-retry-until 2026-01-01T00:00:00Z"},
			{"min retries negative", []string{"list", "--min-retries", "-1"}, nil, exitUsage, `--min-retries must be a whole number from 0 to 2147483647, got "-1"`},
			{"min retries overflow", []string{"list", "--min-retries", "99999999999"}, nil, exitUsage, `--min-retries must be a whole number`},
			{"sort", []string{"list", "--sort", "colour"}, nil, exitUsage, `--sort must be one of executeAt, nextRetryAt, retries, got "colour"`},
			{"unknown filter", []string{"list", "--filter", "colour=red"}, nil, exitUsage, `--filter "colour=red": unknown filter "colour"; the filters are id, eventId`},
			{"filter without value", []string{"list", "--filter", "processor"}, nil, exitUsage, `--filter "processor": want key=value`},
			{"filter of bad value", []string{"list", "--filter", "status=DONE"}, nil, exitUsage, `--filter status must be one of FAILED, PREPARED, SUCCEEDED, got "DONE"`},
			{"oversized id filter", []string{"list", "--id", long}, nil, exitUsage, "--id is 300 bytes, over the limit of 256"},
			{"oversized cursor", []string{"list", "--cursor", huge}, nil, exitUsage, "--cursor is 5000 bytes, over the limit of 1024"},
			{"output", []string{"list", "-o", "yaml"}, nil, exitUsage, `--output must be table or json, got "yaml"`},
			{"server", []string{"list", "--server", "ftp://x"}, nil, exitUsage, `--server: server address "ftp://x" must be an http or https URL`},
			{"server from env", []string{"list"}, map[string]string{"AMENDS_SERVER": "localhost:8080"}, exitUsage, `--server: server address "localhost:8080"`},
			{"timeout", []string{"list", "--timeout", "0s"}, nil, exitUsage, "--timeout must be positive"},
			{"argument", []string{"list", "all"}, nil, exitUsage, `amends list takes no arguments, got ["all"]`},
			{"unknown flag", []string{"list", "--colour", "red"}, nil, exitUsage, "unknown flag: --colour"},
		},
		"summary": {
			{"view", []string{"summary", "--view", "bogus"}, nil, exitUsage, "--view must be one of"},
			{"status", []string{"summary", "--status", "x"}, nil, exitUsage, `--status must be one of FAILED, PREPARED, SUCCEEDED, got "x"`},
			{"since", []string{"summary", "--since", "now"}, nil, exitUsage, `--since must be an RFC 3339 time`},
			{"output", []string{"summary", "-o", "csv"}, nil, exitUsage, "--output must be table or json"},
			{"argument", []string{"summary", "Mailer"}, nil, exitUsage, "amends summary takes no arguments"},
			{"limit is not summary's", []string{"summary", "--limit", "5"}, nil, exitUsage, "unknown flag: --limit"},
		},
		"show": {
			{"no id", []string{"show"}, nil, exitUsage, "amends show takes one record id"},
			{"two ids", []string{"show", "a", "b"}, nil, exitUsage, "amends show takes one record id"},
			{"empty id", []string{"show", ""}, nil, exitUsage, "amends show takes one record id"},
			{"oversized id", []string{"show", long}, nil, exitUsage, "is over the limit of 256 bytes"},
			{"huge id", []string{"show", huge}, nil, exitUsage, `the record id "xxxx`[:0] + `(5000 bytes) is over the limit of 256 bytes`},
			{"control character", []string{"show", "a\x01b"}, nil, exitUsage, `the record id "a\x01b" has a byte that is not text`},
			{"output", []string{"show", id, "-o", "yaml"}, nil, exitUsage, "--output must be table or json"},
			{"unknown id", []string{"show", "nope"}, nil, exitNotFound, "no ExecutionFailed record with id nope; list records with `amends list`"},
		},
		"history": {
			{"no id", []string{"history"}, nil, exitUsage, "amends history takes one record id"},
			{"oversized id", []string{"history", long}, nil, exitUsage, "is over the limit of 256 bytes"},
			{"timeout", []string{"history", id, "--timeout", "-1s"}, nil, exitUsage, "--timeout must be positive"},
			{"unknown id", []string{"history", "nope"}, nil, exitNotFound, "nope"},
		},
		"prepare": {
			{"no id nor filter", []string{"prepare"}, nil, exitUsage, "prepare needs a record id, or filters"},
			{"id and filter", []string{"prepare", id, "--processor", "Mailer"}, nil, exitUsage, "give a record id or filters, not both"},
			{"dry-run and yes on one record", []string{"prepare", id, "--dry-run", "--yes"}, nil, exitUsage, "give --dry-run or --yes, not both"},
			{"rate on one record", []string{"prepare", id, "--rate", "5"}, nil, exitUsage, "--rate is for batches over filters"},
			{"rate on one record", []string{"prepare", id, "--rate", "5"}, nil, exitUsage, "--rate is for batches over filters"},
			{"neither dry run nor yes", []string{"prepare", "--processor", "Mailer"}, nil, exitUsage, "not neither"},
			{"both dry run and yes", []string{"prepare", "--processor", "Mailer", "--dry-run", "--yes"}, nil, exitUsage, "not both"},
			{"yes from env", []string{"prepare", "--processor", "Mailer"}, map[string]string{"AMENDS_YES": "true"}, exitUsage, "ignoring AMENDS_YES"},
			{"filter from env", []string{"prepare", "--yes"}, map[string]string{"AMENDS_PROCESSOR": "Mailer"}, exitUsage, "prepare needs a record id, or filters"},
			{"rate too high", []string{"prepare", "--processor", "Mailer", "--yes", "--rate", "5000"}, nil, exitUsage, "--rate must be from 0 (the server's default, 50) to 1000 records per second, got 5000"},
			{"rate negative", []string{"prepare", "--processor", "Mailer", "--yes", "--rate", "-1"}, nil, exitUsage, "--rate must be from 0"},
			{"rate not a number", []string{"prepare", "--processor", "Mailer", "--yes", "--rate", "fast"}, nil, exitUsage, `invalid argument "fast" for "--rate" flag: want a number` + "\n"},
			{"rate NaN", []string{"prepare", "--processor", "Mailer", "--yes", "--rate", "NaN"}, nil, exitUsage, "--rate must be from 0"},
			{"batch limit negative", []string{"prepare", "--processor", "Mailer", "--yes", "--limit", "-1"}, nil, exitUsage, "--limit must be 0 (the server's limit) or more, got -1"},
			{"oversized request id", []string{"prepare", "--processor", "Mailer", "--yes", "--request-id", long}, nil, exitUsage, "--request-id is 300 bytes, over the limit of 256"},
			{"blank request id", []string{"prepare", "--processor", "Mailer", "--yes", "--request-id", "  "}, nil, exitUsage, "--request-id is blank"},
			{"oversized reason", []string{"prepare", id, "--reason", huge}, nil, exitUsage, "--reason is 5000 bytes, over the limit of 1024"},
			{"reason of two lines", []string{"prepare", id, "--reason", "a\nb"}, nil, exitUsage, "--reason must be one line without control characters"},
			{"oversized idempotency key", []string{"prepare", id, "--idempotency-key", long}, nil, exitUsage, "--idempotency-key is 300 bytes, over the limit of 256"},
			{"since of a batch", []string{"prepare", "--since", "soon", "--dry-run"}, nil, exitUsage, `--since must be an RFC 3339 time`},
			{"unknown filter of a batch", []string{"prepare", "--filter", "colour=red", "--dry-run"}, nil, exitUsage, `unknown filter "colour"`},
			{"oversized id", []string{"prepare", long}, nil, exitUsage, "is over the limit of 256 bytes"},
			{"two ids", []string{"prepare", "a", "b"}, nil, exitUsage, "amends prepare takes one record id, or filters for a batch; got 2 arguments"},
			{"unknown id", []string{"prepare", "nope"}, nil, exitNotFound, "no ExecutionFailed record with id nope"},
			{"succeeded record", []string{"prepare", done}, nil, exitFailure, "ExecutionFailed can not retry."},
		},
		"force-prepare": {
			{"no reason", []string{"force-prepare", id}, nil, exitUsage, "force-prepare needs --reason"},
			{"blank reason", []string{"force-prepare", id, "--reason", "   "}, nil, exitUsage, "force-prepare needs --reason"},
			{"reason from env", []string{"force-prepare", id}, map[string]string{"AMENDS_REASON": "because"}, exitUsage, "force-prepare needs --reason"},
			{"batch without reason", []string{"force-prepare", "--processor", "Mailer", "--yes"}, nil, exitUsage, "force-prepare needs --reason"},
			{"succeeded record", []string{"force-prepare", done, "--reason", "again"}, nil, exitFailure, "ExecutionFailed can not force retry."},
		},
		"retry-spec": {
			{"missing values", []string{"retry-spec", id, "--max-retries", "3"}, nil, exitUsage, "retry-spec needs --min-backoff"},
			{"values from env", []string{"retry-spec", id}, map[string]string{"AMENDS_MAX_RETRIES": "1", "AMENDS_MIN_BACKOFF": "1", "AMENDS_EXECUTION_TIMEOUT": "1"}, exitUsage, "retry-spec needs --max-retries"},
			{"negative", []string{"retry-spec", id, "--max-retries", "-1", "--min-backoff", "1", "--execution-timeout", "1"}, nil, exitUsage, "--max-retries must be 0 or more, got -1"},
			{"negative backoff", []string{"retry-spec", id, "--max-retries", "1", "--min-backoff", "-5", "--execution-timeout", "1"}, nil, exitUsage, "--min-backoff must be 0 or more, got -5"},
			{"overflowing", []string{"retry-spec", id, "--max-retries", "2147483647", "--min-backoff", "2147483647", "--execution-timeout", "1"}, nil, exitUsage, "--max-retries 2147483647 with --min-backoff 2147483647: the last backoff is too long to compute"},
			{"over int32", []string{"retry-spec", id, "--max-retries", "2147483648", "--min-backoff", "1", "--execution-timeout", "1"}, nil, exitUsage, `invalid argument "2147483648" for "--max-retries" flag`},
			{"no id", []string{"retry-spec", "--max-retries", "1", "--min-backoff", "1", "--execution-timeout", "1"}, nil, exitUsage, "amends retry-spec takes one record id"},
			{"unknown id", []string{"retry-spec", "nope", "--max-retries", "1", "--min-backoff", "1", "--execution-timeout", "1"}, nil, exitNotFound, "no ExecutionFailed record with id nope"},
		},
		"mark-recoverable": {
			{"no classification", []string{"mark-recoverable", id}, nil, exitUsage, "mark-recoverable takes a record id and RECOVERABLE, UNRECOVERABLE or UNKNOWN"},
			{"bad classification", []string{"mark-recoverable", id, "sometimes"}, nil, exitUsage, `the classification must be one of RECOVERABLE, UNRECOVERABLE, UNKNOWN, got "sometimes"`},
			{"oversized id", []string{"mark-recoverable", long, "UNKNOWN"}, nil, exitUsage, "is over the limit of 256 bytes"},
			{"unknown id", []string{"mark-recoverable", "nope", "UNKNOWN"}, nil, exitNotFound, "no ExecutionFailed record with id nope"},
		},
		"change-function": {
			{"no kind", []string{"change-function", id, "--context", "c", "--processor", "p", "--name", "n", "--reason", "moved"}, nil, exitUsage, "change-function needs --kind"},
			{"bad kind", []string{"change-function", id, "--context", "c", "--processor", "p", "--name", "n", "--kind", "LAMBDA", "--reason", "moved"}, nil, exitUsage, `--kind must be one of COMMAND, SOURCING, EVENT, STATE_EVENT, ERROR, got "LAMBDA"`},
			{"no reason", []string{"change-function", id, "--context", "c", "--processor", "p", "--name", "n", "--kind", "EVENT"}, nil, exitUsage, "change-function needs --reason"},
			{"blank name", []string{"change-function", id, "--context", "c", "--processor", "p", "--name", " ", "--kind", "EVENT", "--reason", "moved"}, nil, exitUsage, "change-function needs --name"},
			{"oversized reason", []string{"change-function", id, "--context", "c", "--processor", "p", "--name", "n", "--kind", "EVENT", "--reason", huge}, nil, exitUsage, "--reason is 5000 bytes"},
			{"unknown id", []string{"change-function", "nope", "--context", "c", "--processor", "p", "--name", "n", "--kind", "EVENT", "--reason", "moved"}, nil, exitNotFound, "no ExecutionFailed record with id nope"},
		},
	}
	for sub, cases := range tables {
		for _, tc := range cases {
			t.Run(sub+"/"+tc.name, func(t *testing.T) {
				c := e.cli(operatorKey)
				for k, v := range tc.env {
					c.env[k] = v
				}
				requests, stored := e.requests.Load(), e.stored(t)
				code := c.run(t, tc.args...)
				assert.Equal(t, tc.code, code, "stderr:\n%s", c.stderr.String())
				assert.Contains(t, c.stderr.String(), tc.want)
				if !strings.Contains(strings.Join(tc.args, " "), "--filter") {
					assert.NotContains(t, c.stderr.String(), "executeAtFrom", "errors name the flags, not the API's names")
				}
				assert.Equal(t, stored, e.stored(t), "nothing was written")
				if tc.code == exitUsage {
					assert.Equal(t, requests, e.requests.Load(), "a usage error reaches no server")
					assert.Contains(t, c.stderr.String(), "--help' for usage.")
				}
				assert.Less(t, len(c.stderr.String()), 2000, "a huge value is not echoed in full")
				assert.NotContains(t, c.stderr.String(), "strconv", "no Go package names")
			})
		}
	}
}
