package aggregate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

// legacyDir holds Wow-shaped documents from before Wow had recoverable.
const legacyDir = wireDir + "/wow-before-recoverable"

func readLegacy(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(legacyDir, name))
	require.NoError(t, err)
	return data
}

func TestEventsWithoutRecoverableAreUnknown(t *testing.T) {
	created, err := DecodeEvent(NameExecutionFailedCreated, readLegacy(t, "execution_failed_created.json"))
	require.NoError(t, err)
	assert.Equal(t, RecoverabilityUnknown, created.(ExecutionFailedCreated).Recoverable, "Wow's default for an absent recoverable")
	applied, err := DecodeEvent(NameExecutionFailedApplied, readLegacy(t, "execution_failed_applied.json"))
	require.NoError(t, err)
	assert.Equal(t, RecoverabilityUnknown, applied.(ExecutionFailedApplied).Recoverable)

	s := EvolveAll(State{ID: "0TlegacyRec01"}, created)
	assert.Equal(t, RecoverabilityUnknown, s.Recoverable)
	assert.True(t, s.Schedulable(at(1700000180000)), "a record from before the field is scheduled like UNKNOWN")

	nulled, err := DecodeEvent(NameExecutionFailedApplied, []byte(`{"error":{"errorCode":"X"},"executeAt":1,"recoverable":null}`))
	require.NoError(t, err)
	assert.Equal(t, RecoverabilityUnknown, nulled.(ExecutionFailedApplied).Recoverable, "null reads as absent")
	_, err = DecodeEvent(NameExecutionFailedApplied, []byte(`{"error":{"errorCode":"X"},"executeAt":1,"recoverable":"SOMETIMES"}`))
	assert.ErrorIs(t, err, ErrIllegalArgument, "an unknown value is still refused")
}

func TestEvolveReadsEmptyRecoverableAsUnknown(t *testing.T) {
	s := given(ExecutionFailedCreated{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: DefaultRetrySpec})
	assert.Equal(t, RecoverabilityUnknown, s.Recoverable, "created")
	s = Evolve(Evolve(s, CompensationPrepared{}), ExecutionFailedApplied{Error: boom, ExecuteAt: t0 + 1})
	assert.Equal(t, RecoverabilityUnknown, s.Recoverable, "applied")
	s = Evolve(Evolve(s, RecoverableMarked{Recoverable: Unrecoverable}), RecoverableMarked{})
	assert.Equal(t, RecoverabilityUnknown, s.Recoverable, "marked")
}

func TestStateWithoutRecoverableIsUnknown(t *testing.T) {
	data := readLegacy(t, "state.json")
	var v1, v2 State
	require.NoError(t, json.Unmarshal(data, &v1))
	require.NoError(t, jsonv2.Unmarshal(data, &v2))
	for name, s := range map[string]State{"encoding/json": v1, "json/v2": v2} {
		assert.Equal(t, RecoverabilityUnknown, s.Recoverable, name)
		assert.Equal(t, StatusFailed, s.Status, name)
		assert.Equal(t, "0TlegacyRec01", s.ID, name)
		assert.True(t, s.Schedulable(at(1700000180000)), name)
	}
	assert.Equal(t, v1, v2, "both decoders read the same state")

	var empty State
	require.NoError(t, json.Unmarshal([]byte(`{"id":"r","status":"FAILED","recoverable":""}`), &empty))
	assert.Equal(t, RecoverabilityUnknown, empty.Recoverable)
	var missing State
	require.NoError(t, json.Unmarshal([]byte(`{"id":"r"}`), &missing))
	assert.Equal(t, State{ID: "r"}, missing, "a record that does not exist stays the zero state")
	var bad State
	assert.ErrorIs(t, json.Unmarshal([]byte(`{"id":"r","status":"FAILED","recoverable":"MAYBE"}`), &bad), ErrIllegalArgument)
}

// A Wow-shaped creation stored without the field, replayed by the Service
// from the history, gives a record the scheduler selects.
func TestServiceReadsStoredEventWithoutRecoverable(t *testing.T) {
	store := newJSStore(t)
	_, err := store.Append(t.Context(), eventstore.Stream{
		ID: "legacy-1", Aggregate: RecordAggregate("0TlegacyRec01"), CommandID: "c-1", CreateTime: 1700000000000,
		Events: []eventstore.Event{{ID: "e-1", Name: NameExecutionFailedCreated, Body: readLegacy(t, "execution_failed_created.json")}},
	}, 0)
	require.NoError(t, err)
	// And one whose carried state lacks the field.
	snap := append(append([]byte(`{"state":`), readLegacy(t, "state.json")...), '}')
	_, err = store.Append(t.Context(), eventstore.Stream{
		ID: "legacy-2", Aggregate: RecordAggregate("0TlegacyRec01"), Version: 2, CommandID: "c-2", CreateTime: 1700000000001,
		Events: []eventstore.Event{{ID: "e-2", Name: NameRetrySpecApplied, Body: []byte(`{"maxRetries":10,"minBackoff":180,"executionTimeout":120}`)}},
		State:  snap,
	}, 1)
	require.NoError(t, err)

	svc := NewService(store, WithClock(newClock(1700000180000)))
	s, version, err := svc.Get(t.Context(), "0TlegacyRec01")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), version)
	assert.Equal(t, RecoverabilityUnknown, s.Recoverable, "the carried state without recoverable")
	assert.True(t, s.Schedulable(at(1700000180000)))

	other := "0TlegacyRec02"
	_, err = store.Append(t.Context(), eventstore.Stream{
		ID: "legacy-3", Aggregate: RecordAggregate(other), CommandID: "c-3", CreateTime: 1700000000000,
		Events: []eventstore.Event{{ID: "e-3", Name: NameExecutionFailedCreated, Body: readLegacy(t, "execution_failed_created.json")}},
	}, 0)
	require.NoError(t, err)
	s, _, err = svc.Get(t.Context(), other)
	require.NoError(t, err)
	assert.Equal(t, RecoverabilityUnknown, s.Recoverable, "the history without recoverable")
	assert.True(t, s.Schedulable(at(1700000180000)))
}

func TestStateDecodeErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ body, field, msg string }{
		{`{"id":"r","status":"BROKEN"}`, "status", `status must be FAILED, PREPARED or SUCCEEDED, got "BROKEN".`},
		{`{"id":"r","status":"FAILED","retryState":{"retries":"1"}}`, "retryState.retries", "retryState.retries must be a whole number from -2147483648 to 2147483647, got string."},
		{`{"id":"r","status":"FAILED","recoverable":"MAYBE"}`, "recoverable", `recoverable must be RECOVERABLE, UNRECOVERABLE or UNKNOWN, got "MAYBE".`},
	} {
		var v1, v2 State
		err := json.Unmarshal([]byte(c.body), &v1)
		require.ErrorIs(t, err, ErrIllegalArgument, c.body)
		assert.Contains(t, err.Error(), c.msg)
		assert.Equal(t, c.field, ErrorField(err))
		assert.NotContains(t, err.Error(), "Go ")
		assert.NotContains(t, err.Error(), "aggregate.")
		// json/v2 wraps a method's error with the Go type; the field and
		// the kind are still there.
		err = jsonv2.Unmarshal([]byte(c.body), &v2)
		require.ErrorIs(t, err, ErrIllegalArgument, c.body)
		assert.Contains(t, err.Error(), c.msg)
		assert.Equal(t, c.field, ErrorField(err))
	}
}
