package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
)

// Confirmation and selection flags never come from the environment: their
// variables are ignored, with a note, and change nothing.
func TestEnvironmentNeverConfirmsOrSelects(t *testing.T) {
	e := newAPIEnv(t)
	id := e.create(t, 1)

	c := e.cli(operatorKey)
	c.env["AMENDS_YES"] = "1"
	c.env["AMENDS_REASON"] = "from the shell"
	assert.Equal(t, exitUsage, c.run(t, "prepare", "--processor", "Mailer"), c.stderr.String())
	assert.Contains(t, c.stderr.String(), "amends: ignoring AMENDS_REASON, AMENDS_YES: only --server, --token and --timeout come from the environment; give --reason, --yes on the command line\n")
	assert.Contains(t, c.stderr.String(), "a batch needs --dry-run (to see what it would do) or --yes (to do it), not neither")
	assert.Zero(t, e.writes.Load(), "AMENDS_YES ran nothing")

	c = e.cli(viewerKey)
	c.env["AMENDS_PROCESSOR"] = "Nobody"
	c.env["AMENDS_ID"] = "nope"
	c.env["AMENDS_LIMIT"] = "0"
	c.env["AMENDS_VIEW"] = "succeeded"
	c.env["AMENDS_OUTPUT"] = "json"
	require.Equal(t, exitOK, c.run(t, "summary"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), "\n1 records; to-retry 1", "no filter applied, table output")
	assert.Contains(t, c.stderr.String(), "ignoring AMENDS_ID, AMENDS_OUTPUT, AMENDS_PROCESSOR, AMENDS_VIEW:")
	assert.NotContains(t, c.stderr.String(), "AMENDS_LIMIT", "summary has no --limit")

	c = e.cli(viewerKey)
	c.env["AMENDS_LIMIT"] = "0"
	c.env["AMENDS_STATUS"] = "SUCCEEDED"
	require.Equal(t, exitOK, c.run(t, "list"), c.stderr.String())
	assert.Contains(t, c.stdout.String(), id)
	assert.Contains(t, c.stderr.String(), "ignoring AMENDS_LIMIT, AMENDS_STATUS:")

	c = e.cli(operatorKey)
	c.env["AMENDS_MAX_RETRIES"] = "3"
	c.env["AMENDS_MIN_BACKOFF"] = "1"
	c.env["AMENDS_EXECUTION_TIMEOUT"] = "5"
	assert.Equal(t, exitUsage, c.run(t, "retry-spec", id), "the spec is not taken from the environment")
	assert.Contains(t, c.stderr.String(), "retry-spec needs --max-retries")

	c = e.cli(operatorKey)
	c.env["AMENDS_KIND"] = "EVENT"
	assert.Equal(t, exitUsage, c.run(t, "change-function", id, "--context", "order", "--processor", "Mailer2", "--name", "n", "--reason", "moved"))
	assert.Contains(t, c.stderr.String(), "change-function needs --kind")
	assert.Zero(t, e.writes.Load(), "nothing was written")

	v, err := e.index.Get(t.Context(), id)
	require.NoError(t, err)
	assert.Equal(t, aggregate.StatusFailed, v.State.Status)
}

// Only the flags that may come from the environment name a variable in
// their help; serve's flags still do.
func TestHelpNamesOnlyTheVariablesThatApply(t *testing.T) {
	for _, cmd := range []string{"list", "summary", "show", "history", "prepare", "force-prepare", "retry-spec", "mark-recoverable", "change-function"} {
		var c cli
		require.Equal(t, exitOK, c.run(t, cmd, "--help"))
		help := c.stdout.String()
		for _, want := range []string{"[$AMENDS_SERVER]", "[$AMENDS_TOKEN]", "[$AMENDS_TIMEOUT]", "[$AMENDS_LOG_LEVEL]"} {
			assert.Contains(t, help, want, cmd)
		}
		for _, not := range []string{"[$AMENDS_YES]", "[$AMENDS_PROCESSOR]", "[$AMENDS_ID]", "[$AMENDS_REASON]", "[$AMENDS_LIMIT]", "[$AMENDS_OUTPUT]", "[$AMENDS_VIEW]", "[$AMENDS_FILTER]"} {
			assert.NotContains(t, help, not, cmd)
		}
		assert.Contains(t, help, "--timeout duration", cmd)
		assert.Contains(t, help, "(default 30s)", cmd)
	}
	var c cli
	require.Equal(t, exitOK, c.run(t, "serve", "--help"))
	assert.Contains(t, c.stdout.String(), "[$AMENDS_TOKENS]")
	assert.Contains(t, c.stdout.String(), "[$AMENDS_HTTP]")
	// The link the notifications carry (issue 30, item 20).
	assert.Contains(t, c.stdout.String(), "/record?id={id}")
	assert.NotContains(t, c.stdout.String(), "/records/{id}")
	// --yes of a bulk command never comes from the environment.
	for _, cmd := range [][]string{{"rules", "apply", "--help"}, {"replay", "--help"}, {"holds", "release", "--help"}} {
		var h cli
		require.Equal(t, exitOK, h.run(t, cmd...))
		assert.Contains(t, h.stdout.String(), "--yes", cmd)
		assert.NotContains(t, h.stdout.String(), "$AMENDS_YES", cmd)
	}
}

// serve's settings still come from the environment.
func TestServeFlagsStillComeFromTheEnvironment(t *testing.T) {
	c := cli{env: map[string]string{"AMENDS_STORAGE": "disk"}}
	assert.Equal(t, exitUsage, c.run(t, "serve"))
	assert.Contains(t, c.stderr.String(), `--storage must be file or memory, got "disk"`)
	assert.NotContains(t, c.stderr.String(), "ignoring")
}
