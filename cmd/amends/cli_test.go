package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

func TestListShowHistorySummary(t *testing.T) {
	e := newAPIEnv(t)
	id := e.create(t, 1)
	e.create(t, 2)

	c := e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "list"), c.stderr.String())
	out := c.stdout.String()
	assert.Contains(t, out, "ID  ")
	assert.Contains(t, out, id)
	assert.Contains(t, out, "Mailer.onOrderPlaced@order")
	assert.Contains(t, out, "0/10")
	assert.Contains(t, out, "1m ago (2024-12-24 00:25:10Z)", "times are relative and absolute")
	// The aggregate of each record and the count of all (issue 30, item 13).
	assert.Contains(t, out, "AGGREGATE")
	assert.Contains(t, out, "order.order/")
	assert.Contains(t, out, "2 of 2 records shown")

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "list", "-o", "json", "--status", "FAILED", "--limit", "1"))
	var page api.Page
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &page))
	assert.Len(t, page.Items, 1)
	assert.NotEmpty(t, page.Next, "a next cursor for the second record")

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "list", "--view", "to-retry", "--all", "--limit", "1"), c.stderr.String())
	assert.Equal(t, 4, strings.Count(c.stdout.String(), "\n"), "a header, both records and the filter: %s", c.stdout.String())
	assert.Contains(t, c.stdout.String(), "2 of 2 records shown, matching view=to-retry")

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "show", id))
	assert.Contains(t, c.stdout.String(), "status             FAILED")
	assert.Contains(t, c.stdout.String(), "can prepare        true")

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "history", id))
	assert.Contains(t, c.stdout.String(), "recorder  create_execution_failed  execution_failed_created")

	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "summary"))
	assert.Contains(t, c.stdout.String(), "Mailer.onOrderPlaced@order  Timeout  2")
	assert.Contains(t, c.stdout.String(), "2 records; to-retry 2")
	assert.Contains(t, c.stdout.String(), "UNDER LIMIT", "the column says what it counts (issue 30, item 10)")
	assert.NotContains(t, c.stdout.String(), "RETRYABLE")

	// Names an operator can guess (item 12): a FAILED record has no
	// running attempt to time out; due and waiting name the views.
	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "show", id))
	assert.Contains(t, c.stdout.String(), "timeout at         - (no attempt running)")
	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "list", "--view", "waiting"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "2 of 2 records shown, matching view=to-retry")
	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "list", "--view", "due"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "no records match view=next-retry: none is due now; the records waiting for a later retry are in --view to-retry")

	// rules list without rules says so (item 13).
	c = e.cli(viewerKey)
	require.Equal(t, exitOK, c.run(t, "rules", "list"), c.stderr.String())
	assert.Equal(t, "no rules; add one with `amends rules add` (a fingerprint, or a function and error code, and an action)\n", c.stdout.String())
}

func TestOperatorCommandsAndExitCodes(t *testing.T) {
	e := newAPIEnv(t)
	id := e.create(t, 1)

	c := e.cli(operatorKey)
	require.Equal(t, exitOK, c.run(t, "prepare", id, "--reason", "smtp back"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), id+": prepare_compensation")
	assert.Contains(t, c.stdout.String(), "status PREPARED")

	c = e.cli(operatorKey)
	assert.Equal(t, exitFailure, c.run(t, "prepare", id))
	assert.Equal(t, "amends: ExecutionFailed can not retry. (status PREPARED, retries 1/10, recoverable UNKNOWN, times out at 2024-12-24T00:28:40Z)\n", c.stderr.String(),
		"a refusal says the record's state")

	c = e.cli(operatorKey)
	require.Equal(t, exitOK, c.run(t, "retry-spec", id, "--max-retries", "3", "--min-backoff", "1", "--execution-timeout", "5", "-o", "json"))
	var res api.CommandResponse
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &res))
	assert.Equal(t, int32(3), res.State.RetrySpec.MaxRetries)

	c = e.cli(operatorKey)
	require.Equal(t, exitOK, c.run(t, "mark-recoverable", id, "unrecoverable"), c.stderr.String())
	c = e.cli(operatorKey)
	assert.Equal(t, exitFailure, c.run(t, "mark-recoverable", id, "UNRECOVERABLE"))
	assert.Contains(t, c.stderr.String(), "ExecutionFailed recoverable is already marked to UNRECOVERABLE.")

	c = e.cli(operatorKey)
	require.Equal(t, exitOK, c.run(t, "change-function", id, "--context", "order", "--processor", "Mailer2", "--name", "onOrderPlaced", "--kind", "EVENT", "--reason", "renamed"), c.stderr.String())

	c = e.cli(operatorKey)
	assert.Equal(t, exitNotFound, c.run(t, "show", "nope"))
	assert.Equal(t, "amends: no ExecutionFailed record with id nope; list records with `amends list`\n", c.stderr.String())

	c = e.cli(viewerKey)
	assert.Equal(t, exitFailure, c.run(t, "prepare", id))
	assert.Contains(t, c.stderr.String(), "token alice has role viewer")

	c = e.cli("")
	assert.Equal(t, exitUnauthenticated, c.run(t, "list"), "a refused credential has its own exit code")
	assert.Contains(t, c.stderr.String(), "(set AMENDS_TOKEN)")
}

// force-prepare on a SUCCEEDED record prints the aggregate's reason and
// exits 1.
func TestForcePrepareOnSucceededRecord(t *testing.T) {
	e := newAPIEnv(t)
	id := e.create(t, 1)
	_, err := e.svc.Execute(t.Context(), id, aggregate.PrepareCompensation{}, aggregate.Meta{})
	require.NoError(t, err)
	res, err := e.svc.Execute(t.Context(), id, aggregate.ApplyExecutionSuccess{ExecuteAt: t0}, aggregate.Meta{})
	require.NoError(t, err)
	require.NoError(t, e.index.WaitFor(t.Context(), id, res.Version))

	c := e.cli(operatorKey)
	assert.Equal(t, exitFailure, c.run(t, "force-prepare", id, "--reason", "try again"))
	assert.Equal(t, "amends: ExecutionFailed can not force retry. (status SUCCEEDED, retries 1/10, recoverable UNKNOWN)\n", c.stderr.String())
}

func TestCommandUsageErrors(t *testing.T) {
	e := newAPIEnv(t)
	for _, args := range [][]string{
		{"show"},
		{"show", "a", "b"},
		{"force-prepare", "some-id"},
		{"prepare"},
		{"prepare", "id", "--processor", "Mailer"},
		{"prepare", "--processor", "Mailer"},
		{"prepare", "--processor", "Mailer", "--dry-run", "--yes"},
		{"prepare", "--filter", "processor"},
		{"prepare", "--filter", "colour=red", "--dry-run"},
		{"retry-spec", "id", "--max-retries", "3"},
		{"mark-recoverable", "id", "sometimes"},
		{"change-function", "id", "--context", "c", "--processor", "p", "--name", "n", "--kind", "EVENT"},
		{"list", "-o", "yaml"},
		{"list", "--server", "ftp://x"},
	} {
		c := e.cli(operatorKey)
		assert.Equal(t, exitUsage, c.run(t, args...), "%v: %s", args, c.stderr.String())
	}
}

func TestBatchForcePrepareWithProgress(t *testing.T) {
	e := newAPIEnv(t)
	for i := range 5 {
		e.create(t, i)
	}
	c := e.cli(operatorKey)
	require.Equal(t, exitOK, c.run(t, "force-prepare", "--processor", "Mailer", "--dry-run"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "dry run: would touch force_prepare_compensation on 5 of 5 records matching processor=Mailer: would-apply 5")

	c = e.cli(operatorKey)
	require.Equal(t, exitOK, c.run(t, "force-prepare", "--filter", "processor=Mailer", "--yes", "--reason", "smtp back", "--rate", "1000", "--request-id", "inc-1"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "ran force_prepare_compensation on 5 of 5 records matching processor=Mailer: applied 5")
	assert.Contains(t, c.stderr.String(), "force_prepare_compensation 5/5: applied 5\n", "progress on stderr")
	assert.NotContains(t, c.stderr.String(), "\r", "stderr is no terminal: no bar redrawn with \\r")

	c = e.cli(operatorKey)
	require.Equal(t, exitOK, c.run(t, "force-prepare", "--filter", "processor=Mailer", "--yes", "--reason", "smtp back", "--rate", "1000", "--request-id", "inc-1"))
	assert.Contains(t, c.stdout.String(), "this is the stored result of request inc-1")
}
