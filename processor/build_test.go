package processor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/quarantine"
)

func TestBuildRegistryHeartbeat(t *testing.T) {
	e := newEnv(t)
	reg, err := processor.OpenBuildRegistry(t.Context(), e.js, "", 0, 0)
	require.NoError(t, err)
	_, err = processor.OpenBuildRegistry(t.Context(), e.js, "", time.Millisecond, 0)
	require.ErrorIs(t, err, processor.ErrInvalidOption)

	p := e.processor(processor.WithBuildRegistry(reg, processor.Build{Version: "v1.2.0", Revision: "abc123"}))
	require.NoError(t, p.Register(fn("Mailer", "send", "placed"), newCounter().handle))
	stop := run(t, p)
	var entries []processor.BuildEntry
	require.Eventually(t, func() bool {
		entries, err = reg.Builds(t.Context())
		return err == nil && len(entries) == 1
	}, waitFor, 10*time.Millisecond, "the running processor registers its build")
	got := entries[0]
	assert.Equal(t, ctxName, got.Context)
	assert.Equal(t, "Mailer", got.Processor)
	assert.Equal(t, processor.Build{Version: "v1.2.0", Revision: "abc123"}, got.Build)
	assert.Equal(t, "v1.2.0@abc123", got.Build.String())
	assert.Equal(t, t0, got.StartedAt, "the processor's clock")
	assert.NotEmpty(t, got.Instance)

	stop()
	entries, err = reg.Builds(t.Context())
	require.NoError(t, err)
	assert.Empty(t, entries, "a stopped processor removes its entry")
}

// Finding 11: an odd key in the registry (one nats.go cannot read, or a
// value that is not an entry) made Builds fail, which stopped deploy
// releases of every processor until its TTL. It is skipped and
// quarantined; the other entries are listed.
func TestBuildRegistrySkipsEntriesThatDoNotValidate(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	q, err := quarantine.New(e.js, quarantine.WithMemoryStorage())
	require.NoError(t, err)
	reg, err := processor.OpenBuildRegistry(ctx, e.js, "", 0, 0, processor.WithRegistryQuarantine(q))
	require.NoError(t, err)
	good := processor.BuildEntry{Context: "shop", Processor: "Mailer", Instance: "i1", Build: processor.Build{Version: "v1"}, StartedAt: 1, HeartbeatAt: 2}
	require.NoError(t, reg.Register(ctx, good))
	for key, value := range map[string]string{
		"b-ü":                     `{"context":"shop","processor":"P","instance":"x","build":{"version":"v"},"startedAt":1,"heartbeatAt":1}`,
		"odd":                     `{"context":"shop"}`,
		"c2hvcA.UA.eA":            `{"context":"shop","processor":"P","instance":"x","build":{"version":""},"startedAt":1,"heartbeatAt":1}`,
		"c2hvcA.UA.eQ":            `{"context":"shop","processor":"P","instance":"x","build":{"version":"v"},"startedAt":9000000000000000,"heartbeatAt":9000000000000000}`,
		"c2hvcA.TWFpbGVy.b3RoZXI": `not json`,
	} {
		_, err := e.js.Publish(ctx, "$KV."+processor.DefaultBuildBucket+"."+key, []byte(value))
		require.NoError(t, err)
	}
	got, err := reg.Builds(ctx)
	require.NoError(t, err, "an odd entry is no error of the listing")
	assert.Equal(t, []processor.BuildEntry{good}, got)
	entries, err := q.All(ctx, quarantine.Query{Consumer: processor.DefaultBuildBucket})
	require.NoError(t, err)
	assert.Len(t, entries, 5, "every odd entry is quarantined")
}
