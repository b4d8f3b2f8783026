package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// The schemas of a record's attempts have the wire types' fields.
func TestOpenAPIAttemptSchemasMatchTheTypes(t *testing.T) {
	doc := loadDoc(t)
	for name, v := range map[string]any{"Attempts": api.Attempts{}, "TimelineEntry": aggregate.TimelineEntry{}} {
		schema := deref(doc, obj{"$ref": "#/components/schemas/" + name})
		require.NotNil(t, schema, name)
		all, _ := tagFields(v)
		assert.Equal(t, all, keys(schema["properties"].(obj)), "%s: the fields", name)
	}
}
