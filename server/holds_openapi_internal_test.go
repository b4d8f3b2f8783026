package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/api"
)

// The schemas of holds and range replays have the wire types' fields.
func TestOpenAPIOrderingSchemasMatchTheTypes(t *testing.T) {
	doc := loadDoc(t)
	for name, v := range map[string]any{
		"Hold": api.Hold{}, "HoldHead": api.HoldHead{}, "HeldEvent": api.HeldEvent{}, "HoldAudit": api.HoldAudit{}, "HoldClaim": api.HoldClaim{},
		"HoldSummary": api.HoldSummary{}, "HoldPage": api.HoldPage{}, "HoldAction": api.HoldActionRequest{}, "ReleasePlan": api.ReleasePlan{},
		"ReplayStart": api.ReplayStart{}, "ReplayStarted": api.ReplayStarted{}, "Replay": api.Replay{}, "ReplayPlan": api.ReplayPlan{}, "PlannedEvent": api.PlannedEvent{},
	} {
		schema := deref(doc, obj{"$ref": "#/components/schemas/" + name})
		require.NotNil(t, schema, name)
		all, _ := tagFields(v)
		assert.Equal(t, all, keys(schema["properties"].(obj)), "%s: the fields", name)
	}
}

// The schemas of circuits and drains have the wire types' fields, and
// require those always sent.
func TestOpenAPICircuitSchemasMatchTheTypes(t *testing.T) {
	doc := loadDoc(t)
	for name, v := range map[string]any{
		"Circuit": api.Circuit{}, "CircuitProbe": api.CircuitProbe{}, "CircuitFailure": api.CircuitFailure{}, "CircuitTransition": api.CircuitTransition{},
		"CircuitList": api.CircuitList{}, "CircuitAction": api.CircuitAction{}, "CircuitChange": api.CircuitChange{}, "InvalidRecord": api.InvalidRecord{},
		"Drain": api.Drain{}, "DrainList": api.DrainList{},
	} {
		schema := deref(doc, obj{"$ref": "#/components/schemas/" + name})
		require.NotNil(t, schema, name)
		all, required := tagFields(v)
		assert.Equal(t, all, keys(schema["properties"].(obj)), "%s: the fields", name)
		assert.Equal(t, required, strs(schema["required"]), "%s: the fields always sent", name)
	}
}
