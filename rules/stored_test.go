package rules_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/internal/fakeclock"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/rules"
)

// The bucket keeps a rule without what is derived or filled when it is
// shown (touched, live, matching), though api.Rule is api.Rule; a read
// derives Touched and believes none of them from the bucket.
func TestStoredRuleKeepsOnlyItsOwnFields(t *testing.T) {
	ctx := t.Context()
	js := natstest.New(t).JetStream()
	clock := fakeclock.At(t0.UnixMilli())
	st, err := rules.OpenStore(ctx, js, rules.WithClock(clock))
	require.NoError(t, err)
	r := byFunction("Timeout", rules.MarkUnrecoverable)
	r.Reason, r.Touched, r.Live, r.Matching = "x", 40, true, 5
	added, err := st.Add(ctx, r)
	require.NoError(t, err)
	_, err = st.RecordApply(ctx, added.ID, "bob", "backfill", 3)
	require.NoError(t, err)

	kv, err := js.KeyValue(ctx, rules.DefaultBucket)
	require.NoError(t, err)
	e, err := kv.Get(ctx, added.ID)
	require.NoError(t, err)
	var stored map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(e.Value(), &stored))
	for _, k := range []string{"touched", "live", "matching"} {
		assert.NotContains(t, stored, k, "the stored rule %s", e.Value())
	}
	for _, k := range []string{"id", "match", "action", "reason", "createdAt", "recorded", "applied", "audit"} {
		assert.Contains(t, stored, k, "the stored rule %s", e.Value())
	}

	// A writer that stores them anyway is not believed.
	stored["touched"], stored["live"], stored["matching"] = json.RawMessage("99"), json.RawMessage("true"), json.RawMessage("7")
	b, err := json.Marshal(stored)
	require.NoError(t, err)
	_, err = kv.Put(ctx, added.ID, b)
	require.NoError(t, err)
	got, err := st.Get(ctx, added.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 3, got.Touched, "touched is recorded + applied")
	assert.False(t, got.Live, "live is the server's to fill")
	assert.Zero(t, got.Matching, "matching is the server's to fill")
}
