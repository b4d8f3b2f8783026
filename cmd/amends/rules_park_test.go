package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
)

// --action takes the park-until-deploy action by its name in words; the
// rule is stored and shown by the wire's name, HOLD_UNTIL_DEPLOY, which
// the command still takes.
func TestRulesAddParkUntilDeploy(t *testing.T) {
	e := newAPIEnv(t)
	e.create(t, 1)
	for _, action := range []string{"park_until_deploy", "HOLD_UNTIL_DEPLOY"} {
		op := e.cli(operatorKey)
		require.Equal(t, 0, op.run(t, "rules", "add", "--action", action, "--function-context", "order", "--processor", "Mailer",
			"--function", "onOrderPlaced", "--error-code", "Timeout", "--reason", "fix in review", "-o", "json"), op.stderr.String())
		var rule api.Rule
		require.NoError(t, json.Unmarshal([]byte(op.stdout.String()), &rule), op.stdout.String())
		assert.Equal(t, "HOLD_UNTIL_DEPLOY", rule.Action, "--action %s", action)
	}
}
