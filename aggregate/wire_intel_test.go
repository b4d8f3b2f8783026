package aggregate_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
)

// The shapes of failure intelligence (fingerprint, maxBackoff, jitter):
// additive fields with goldens of their own; the published goldens above
// keep their bytes because the fields are omitted when absent.
var (
	intelSpec  = RetrySpec{MaxRetries: 10, MinBackoff: 180, ExecutionTimeout: 120, MaxBackoff: 3600, Jitter: 0.25}
	intelError = ErrorDetails{ErrorCode: "IllegalState", ErrorMsg: "order 42 not found", StackTrace: "main.handle\n\tmain.go:12",
		Fingerprint: "fp1-3b0c5e0a9d41f7c2"}
)

func TestWireIntelCommands(t *testing.T) {
	for _, g := range []struct {
		file string
		cmd  Command
	}{
		{NameApplyRetrySpec + ".backoff", ApplyRetrySpec{MaxRetries: 5, MinBackoff: 240, ExecutionTimeout: 300, MaxBackoff: 3600, Jitter: 0.25}},
		{NameCreateExecutionFailed + ".intel", CreateExecutionFailed{EventID: evtID, Function: fn, Error: intelError, ExecuteAt: t0, RetrySpec: &intelSpec, Recoverable: RecoverabilityUnknown}},
		{NameApplyExecutionFailed + ".fingerprint", ApplyExecutionFailed{Error: intelError, ExecuteAt: 1735000180000, Recoverable: Recoverable, Attempt: 1}},
	} {
		t.Run(g.file, func(t *testing.T) {
			name, body, err := EncodeCommand(g.cmd)
			require.NoError(t, err)
			file := golden(t, filepath.Join(wireDir, "commands", g.file+".json"), body)
			back, err := DecodeCommand(name, file)
			require.NoError(t, err)
			assert.Equal(t, g.cmd, back, "decode(golden) == value")
		})
	}
}

func TestWireIntelEvents(t *testing.T) {
	for _, g := range []struct {
		file string
		ev   Event
	}{
		{NameRetrySpecApplied + ".backoff", RetrySpecApplied{MaxRetries: 5, MinBackoff: 240, ExecutionTimeout: 300, MaxBackoff: 3600, Jitter: 0.25}},
		{NameExecutionFailedCreated + ".intel", ExecutionFailedCreated{EventID: evtID, Function: fn, Error: intelError, ExecuteAt: t0, RetryState: goldenState, RetrySpec: intelSpec, Recoverable: RecoverabilityUnknown}},
		{NameExecutionFailedApplied + ".fingerprint", ExecutionFailedApplied{Error: intelError, ExecuteAt: 1735000180000, Recoverable: Recoverable, Attempt: 1}},
	} {
		t.Run(g.file, func(t *testing.T) {
			name, body, err := EncodeEvent(g.ev)
			require.NoError(t, err)
			file := golden(t, filepath.Join(wireDir, "events", g.file+".json"), body)
			back, err := DecodeEvent(name, file)
			require.NoError(t, err)
			assert.Equal(t, g.ev, back, "decode(golden) == value")
		})
	}
}

func TestWireIntelState(t *testing.T) {
	s := State{ID: "rec", EventID: evtID, Function: fn, Error: intelError, ExecuteAt: t0, RetrySpec: intelSpec,
		RetryState: goldenState, Status: StatusFailed, Recoverable: RecoverabilityUnknown}
	body, err := s.MarshalJSON()
	require.NoError(t, err)
	file := golden(t, filepath.Join(wireDir, "state.intel.json"), body)
	var back State
	require.NoError(t, back.UnmarshalJSON(file))
	assert.Equal(t, s, back)
}
