package aggregate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
)

// The shapes of attempt runs (when, where and in which trace an attempt
// ran): an optional "run" object with goldens of its own. The published
// goldens keep their bytes because a nil Run is omitted.
var (
	goldenRun = Run{StartedAt: 1735000179250, Instance: "3f1c2a9e-1d4b-4a52-9a8e-6f0e5d1c7b21", Build: "v1.4.2@9e4c1b7",
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	firstRun = Run{StartedAt: t0 - 750, Instance: "3f1c2a9e-1d4b-4a52-9a8e-6f0e5d1c7b21", Build: "v1.4.1@51d0a2c",
		TraceID: "0af7651916cd43dd8448eb211c80319c"}
)

func TestWireRunCommands(t *testing.T) {
	for _, g := range []struct {
		file string
		cmd  Command
	}{
		{NameCreateExecutionFailed + ".run", CreateExecutionFailed{EventID: evtID, Function: fn, Error: goldenError, ExecuteAt: t0, RetrySpec: &goldenSpec, Recoverable: RecoverabilityUnknown, Run: &firstRun}},
		{NameApplyExecutionFailed + ".run", ApplyExecutionFailed{Error: goldenError, ExecuteAt: 1735000180000, Recoverable: Recoverable, Attempt: 1, PreparedVersion: 2, Run: &goldenRun}},
		{NameApplyExecutionSuccess + ".run", ApplyExecutionSuccess{ExecuteAt: 1735000180000, Attempt: 1, PreparedVersion: 2, Run: &goldenRun}},
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

func TestWireRunEvents(t *testing.T) {
	for _, g := range []struct {
		file string
		ev   Event
	}{
		{NameExecutionFailedCreated + ".run", ExecutionFailedCreated{EventID: evtID, Function: fn, Error: goldenError, ExecuteAt: t0, RetryState: goldenState, RetrySpec: goldenSpec, Recoverable: RecoverabilityUnknown, Run: &firstRun}},
		{NameExecutionFailedApplied + ".run", ExecutionFailedApplied{Error: goldenError, ExecuteAt: 1735000180000, Recoverable: Recoverable, Attempt: 1, Run: &goldenRun}},
		{NameExecutionSuccessApplied + ".run", ExecutionSuccessApplied{ExecuteAt: 1735000180000, Attempt: 1, Run: &goldenRun}},
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

// Events written before runs existed (every published golden) decode with
// no Run, and an empty Run is never written.
func TestRunIsAbsentFromOlderEventsAndEmptyRuns(t *testing.T) {
	for _, name := range []string{NameExecutionFailedCreated, NameExecutionFailedApplied, NameExecutionSuccessApplied} {
		e, err := DecodeEvent(name, mustRead(t, filepath.Join(wireDir, "events", name+".json")))
		require.NoError(t, err, name)
		switch e := e.(type) {
		case ExecutionFailedCreated:
			assert.Nil(t, e.Run, name)
		case ExecutionFailedApplied:
			assert.Nil(t, e.Run, name)
		case ExecutionSuccessApplied:
			assert.Nil(t, e.Run, name)
		}
	}
	s := given(created(goldenSpec, 0)...)
	s.Status = StatusPrepared
	events, err := Decide(s, ApplyExecutionSuccess{ExecuteAt: t0 + 5000, Run: &Run{}}, at(t0+5000))
	require.NoError(t, err)
	_, body, err := EncodeEvent(events[0])
	require.NoError(t, err)
	assert.NotContains(t, string(body), "run", "an empty run is not written")
}

func TestDecideCarriesAndChecksTheRun(t *testing.T) {
	now := at(t0)
	events, err := Decide(State{ID: "rec-1"}, CreateExecutionFailed{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, Run: &firstRun}, now)
	require.NoError(t, err)
	assert.Equal(t, &firstRun, events[0].(ExecutionFailedCreated).Run, "the creation keeps the run")

	prepared := given(preparedAfter(goldenSpec, 1)...)
	events, err = Decide(prepared, ApplyExecutionFailed{Error: boom, ExecuteAt: 1735000180000, Run: &goldenRun}, at(1735000180000))
	require.NoError(t, err)
	assert.Equal(t, &goldenRun, events[0].(ExecutionFailedApplied).Run, "a failed replay keeps the run")

	long := make([]byte, MaxRunInstanceLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, c := range []struct {
		name, field, msg string
		run              Run
	}{
		{"start after the end", "run.startedAt", "run.startedAt must be an epoch-millisecond time from 1 to executeAt", Run{StartedAt: t0 + 1}},
		{"negative start", "run.startedAt", "run.startedAt must be", Run{StartedAt: -1}},
		{"long instance", "run.instance", "run.instance must be at most 128 bytes, got 129.", Run{Instance: string(long)}},
		{"control character", "run.build", "run.build must be printable UTF-8 text.", Run{Build: "v1\n"}},
		{"short trace id", "run.traceId", "run.traceId must be 32 lowercase hex digits", Run{TraceID: "abc"}},
		{"upper-case trace id", "run.traceId", "run.traceId must be 32 lowercase hex digits", Run{TraceID: "4BF92F3577B34DA6A3CE929D0E0E4736"}},
		{"zero trace id", "run.traceId", "not all zero", Run{TraceID: "00000000000000000000000000000000"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decide(State{ID: "rec-1"}, CreateExecutionFailed{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, Run: &c.run}, now)
			require.ErrorIs(t, err, ErrIllegalArgument)
			assert.Equal(t, c.field, ErrorField(err))
			assert.Contains(t, err.Error(), c.msg)
			_, err = Decide(prepared, ApplyExecutionSuccess{ExecuteAt: t0, Run: &c.run}, at(t0))
			require.ErrorIs(t, err, ErrIllegalArgument, "a replay's result checks the run too")
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func TestCleanRunIsAlwaysAccepted(t *testing.T) {
	long := ""
	for range 100 {
		long += "é\x01"
	}
	r := Run{StartedAt: t0 + 5, Instance: long, Build: "v1\x7f", TraceID: "XYZ"}.Clean(t0)
	assert.Zero(t, r.StartedAt, "a start after the end is dropped")
	assert.LessOrEqual(t, len(r.Instance), MaxRunInstanceLen)
	assert.Contains(t, r.Instance, "é?")
	assert.Equal(t, "v1?", r.Build)
	assert.Empty(t, r.TraceID)
	_, err := Decide(State{ID: "rec-1"}, CreateExecutionFailed{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, Run: &r}, at(t0))
	require.NoError(t, err, "a cleaned run is accepted")
	kept := goldenRun.Clean(1735000180000)
	assert.Equal(t, goldenRun, kept, "a valid run is kept as it is")
}
