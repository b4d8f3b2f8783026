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

func TestRulesCommands(t *testing.T) {
	e := newAPIEnv(t)
	id := e.create(t, 1)
	e.create(t, 2)
	op := e.cli(operatorKey)

	require.Equal(t, 2, op.run(t, "rules", "add", "--action", "WAIVE", "--processor", "Mailer", "--reason", "r"), "a partial match is a usage error")
	assert.Contains(t, op.stderr.String(), "give --fingerprint, or all of --function-context, --processor, --function and --error-code")
	op = e.cli(operatorKey)
	require.Equal(t, 2, op.run(t, "rules", "add", "--action", "WAIVE", "--fingerprint", "fp1-0000000000000000"), "a rule needs a reason")

	op = e.cli(operatorKey)
	require.Equal(t, 0, op.run(t, "rules", "add", "--action", "mark_unrecoverable", "--function-context", "order", "--processor", "Mailer",
		"--function", "onOrderPlaced", "--error-code", "Timeout", "--reason", "smtp is gone", "-o", "json"), op.stderr.String())
	var rule api.Rule
	require.NoError(t, json.Unmarshal([]byte(op.stdout.String()), &rule))
	assert.Equal(t, 2, rule.Matching)

	op = e.cli(operatorKey)
	require.Equal(t, 0, op.run(t, "rules", "apply", rule.ID, "--dry-run"), op.stderr.String())
	assert.Contains(t, op.stdout.String(), "dry run of rule "+rule.ID+" (mark_recoverable) on 2 of 2 matching records: would-apply 2")
	v, _, err := e.svc.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, aggregate.RecoverabilityUnknown, v.Recoverable, "a dry run changes nothing")

	// One confirmation rule for every bulk command (issue 30, item 13).
	op = e.cli(operatorKey)
	require.Equal(t, 2, op.run(t, "rules", "apply", rule.ID, "--rate", "1000"), "rules apply needs --yes or --dry-run")
	assert.Contains(t, op.stderr.String(), "rules apply needs --dry-run (to see what it would do) or --yes (to do it), not neither")
	op = e.cli(operatorKey)
	require.Equal(t, 2, op.run(t, "rules", "apply", rule.ID, "--dry-run", "--yes"), "not both")
	op = e.cli(operatorKey)
	require.Equal(t, 0, op.run(t, "rules", "apply", rule.ID, "--rate", "1000", "--yes"), op.stderr.String())
	assert.Contains(t, op.stdout.String(), "applied 2")
	v, _, err = e.svc.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, aggregate.Unrecoverable, v.Recoverable)

	viewer := e.cli(viewerKey)
	require.Equal(t, 0, viewer.run(t, "rules", "list"), viewer.stderr.String())
	out := viewer.stdout.String()
	assert.Contains(t, out, rule.ID)
	assert.Contains(t, out, "Mailer.onOrderPlaced@order Timeout")
	assert.Contains(t, out, "MARK_UNRECOVERABLE")

	op = e.cli(operatorKey)
	require.Equal(t, exitUsage, op.run(t, "rules", "remove", rule.ID, "--reason", "smtp is back"), "a removal needs --dry-run or --yes")
	op = e.cli(operatorKey)
	require.Equal(t, 0, op.run(t, "rules", "remove", rule.ID, "--reason", "smtp is back", "--dry-run"), op.stderr.String())
	assert.Contains(t, op.stdout.String(), "dry run: would remove rule "+rule.ID)
	op = e.cli(operatorKey)
	require.Equal(t, 0, op.run(t, "rules", "remove", rule.ID, "--reason", "smtp is back", "--yes"), op.stderr.String())
	assert.Contains(t, op.stdout.String(), "removed rule "+rule.ID)
	viewer = e.cli(viewerKey)
	require.Equal(t, 0, viewer.run(t, "rules", "list"), viewer.stderr.String())
	assert.Contains(t, viewer.stdout.String(), "removed")

	viewer = e.cli(viewerKey)
	require.Equal(t, 0, viewer.run(t, "summary", "--by", "fingerprint"), viewer.stderr.String())
	assert.Contains(t, viewer.stdout.String(), "FINGERPRINT")
	viewer = e.cli(viewerKey)
	assert.Equal(t, 2, viewer.run(t, "summary", "--by", "code"))

	viewer = e.cli(viewerKey)
	require.Equal(t, 0, viewer.run(t, "show", id), viewer.stderr.String())
	assert.NotContains(t, viewer.stdout.String(), "remaining retries", "an UNRECOVERABLE record has no automatic retries left")
}

func TestShowPrintsTheRemainingSchedule(t *testing.T) {
	e := newAPIEnv(t)
	id := e.create(t, 1)
	viewer := e.cli(viewerKey)
	require.Equal(t, 0, viewer.run(t, "show", id), viewer.stderr.String())
	out := viewer.stdout.String()
	require.Contains(t, out, "remaining retries (10,")
	assert.Contains(t, out, "retry 1")
	assert.Contains(t, out, "retry 10")
	assert.Equal(t, 10, strings.Count(out, "  retry "), "every retry of Wow's default spec: %s", out)
}

func TestRetrySpecTakesACapAndJitter(t *testing.T) {
	e := newAPIEnv(t)
	id := e.create(t, 1)
	op := e.cli(operatorKey)
	assert.Equal(t, 2, op.run(t, "retry-spec", id, "--max-retries", "5", "--min-backoff", "60", "--execution-timeout", "30", "--jitter", "1.5"))
	op = e.cli(operatorKey)
	require.Equal(t, 0, op.run(t, "retry-spec", id, "--max-retries", "5", "--min-backoff", "60", "--execution-timeout", "30",
		"--max-backoff", "300", "--jitter", "0.25"), op.stderr.String())
	s, _, err := e.svc.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, aggregate.RetrySpec{MaxRetries: 5, MinBackoff: 60, ExecutionTimeout: 30, MaxBackoff: 300, Jitter: 0.25}, s.RetrySpec)
}
