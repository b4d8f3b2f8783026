package recorder_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/fingerprint"
	"github.com/amends-dev/amends/recorder"
)

// A call its circuit refused is described by the circuit's last real
// failure: errorCode CircuitOpen, that failure's message, fingerprint and
// classification; without them, the refusal's own message, fingerprinted,
// RECOVERABLE.
func TestDescribeCircuitOpen(t *testing.T) {
	r, err := recorder.New(&flaky{}, recorder.WithModule("example.com/shop"))
	require.NoError(t, err)

	real, rec := r.Describe(fn, failure.Recoverable(errBoom), failure.Rules{})
	require.Equal(t, aggregate.Recoverable, rec)
	last := circuit.Failure{Code: real.ErrorCode, Message: real.ErrorMsg, Fingerprint: real.Fingerprint, Recoverable: aggregate.RecoverabilityUnknown}
	d, rec := r.Describe(fn, &circuit.OpenError{Function: circuit.Of(fn), Phase: circuit.Open, Since: time.UnixMilli(t0), Last: last}, failure.Rules{})
	assert.Equal(t, aggregate.ErrorDetails{ErrorCode: circuit.ErrorCode, ErrorMsg: errBoom.Error(), Fingerprint: real.Fingerprint}, d)
	assert.Equal(t, aggregate.RecoverabilityUnknown, rec, "the last failure's classification")

	forced := &circuit.OpenError{Function: circuit.Of(fn), Phase: circuit.Open, Since: time.UnixMilli(t0), Forced: true}
	d, rec = r.Describe(fn, forced, failure.Rules{})
	assert.Equal(t, circuit.ErrorCode, d.ErrorCode)
	assert.Equal(t, forced.Error(), d.ErrorMsg)
	assert.True(t, fingerprint.Valid(d.Fingerprint))
	assert.Equal(t, aggregate.Recoverable, rec)
}
