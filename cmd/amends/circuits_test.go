package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
)

func TestCircuitsCommands(t *testing.T) {
	e := newAPIEnv(t)
	viewer := e.cli(viewerKey)
	require.Equal(t, 0, viewer.run(t, "circuits", "list"), viewer.stderr.String())
	assert.Contains(t, viewer.stdout.String(), "no circuit ever opened")

	op := e.cli(operatorKey)
	require.Equal(t, 2, op.run(t, "circuits", "open", "Mailer.send", "--reason", "r", "--yes"), "a function is CONTEXT.PROCESSOR.NAME")
	assert.Contains(t, op.stderr.String(), `function "Mailer.send" must be CONTEXT.PROCESSOR.NAME`)
	op = e.cli(operatorKey)
	require.Equal(t, 2, op.run(t, "circuits", "open", "order.Mailer.send", "--yes"), "a reason is required")
	assert.Contains(t, op.stderr.String(), "--reason is required")
	op = e.cli(operatorKey)
	require.Equal(t, 2, op.run(t, "circuits", "open", "order.Mailer.send", "--reason", "r"), "--yes or --dry-run")
	assert.Contains(t, op.stderr.String(), "circuits open needs --dry-run (to see what it would do) or --yes (to do it), not neither")
	viewer = e.cli(viewerKey)
	assert.NotEqual(t, 0, viewer.run(t, "circuits", "open", "order.Mailer.send", "--reason", "r", "--yes"), "a viewer cannot")

	op = e.cli(operatorKey)
	require.Equal(t, 0, op.run(t, "circuits", "open", "order.Mailer.send", "--reason", "smtp maintenance", "--dry-run"), op.stderr.String())
	assert.Contains(t, op.stdout.String(), "dry run: order.Mailer.send's circuit would become OPEN")
	op = e.cli(operatorKey)
	require.Equal(t, 0, op.run(t, "circuits", "open", "order.Mailer.send", "--reason", "smtp maintenance", "--yes"), op.stderr.String())
	assert.Contains(t, op.stdout.String(), "order.Mailer.send's circuit is OPEN")

	require.Eventually(t, func() bool {
		v := e.cli(viewerKey)
		return v.run(t, "circuits", "list") == 0 && contains(v.stdout.String(), "order.Mailer.send", "OPEN", "none (opened by an operator)", "CLOSED→OPEN operator", "by bob")
	}, 30*time.Second, 5*time.Millisecond, "the list shows the operator's open")
	viewer = e.cli(viewerKey)
	require.Equal(t, 0, viewer.run(t, "circuits", "show", "order.Mailer.send"), viewer.stderr.String())
	assert.Contains(t, viewer.stdout.String(), "smtp maintenance")
	viewer = e.cli(viewerKey)
	require.Equal(t, exitNotFound, viewer.run(t, "circuits", "show", "order.Mailer.sned"), "a misspelt function is not reported closed")
	assert.Contains(t, viewer.stderr.String(), "no circuit of order.Mailer.sned is stored: it never opened, or the name is misspelt")

	op = e.cli(operatorKey)
	require.Equal(t, 0, op.run(t, "circuits", "close", "order.Mailer.send", "--reason", "smtp is back", "--yes", "-o", "json"), op.stderr.String())
	var ch api.CircuitChange
	require.NoError(t, json.Unmarshal([]byte(op.stdout.String()), &ch))
	assert.Equal(t, "CLOSED", ch.Circuit.Phase)
	assert.True(t, ch.Changed)

	viewer = e.cli(viewerKey)
	require.Equal(t, 0, viewer.run(t, "drains", "list"), viewer.stderr.String())
	assert.Contains(t, viewer.stdout.String(), "no drain")
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
