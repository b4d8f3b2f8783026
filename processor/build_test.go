package processor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/processor"
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
