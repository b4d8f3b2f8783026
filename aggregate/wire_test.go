package aggregate_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
)

var update = flag.Bool("update", false, "write the golden files of testdata/wire (only for new shapes: a published golden is never edited)")

const wireDir = "../testdata/wire"

var (
	goldenSpec  = RetrySpec{MaxRetries: 10, MinBackoff: 180, ExecutionTimeout: 120}
	goldenError = ErrorDetails{ErrorCode: "IllegalState", ErrorMsg: "boom", StackTrace: "main.handle\n\tmain.go:12",
		BindingErrors: []BindingError{{Name: "sku", Msg: "must not be blank"}}}
	goldenState = RetryState{Retries: 1, RetryAt: 1735000180000, TimeoutAt: 1735000300000, NextRetryAt: 1735000540000}
)

var goldenCommands = map[string]Command{
	NameCreateExecutionFailed:    CreateExecutionFailed{EventID: evtID, Function: fn, Error: goldenError, ExecuteAt: t0, RetrySpec: &goldenSpec, Recoverable: RecoverabilityUnknown},
	NamePrepareCompensation:      PrepareCompensation{},
	NameForcePrepareCompensation: ForcePrepareCompensation{},
	NameApplyExecutionSuccess:    ApplyExecutionSuccess{ExecuteAt: 1735000180000, Attempt: 1},
	NameApplyExecutionFailed:     ApplyExecutionFailed{Error: goldenError, ExecuteAt: 1735000180000, Recoverable: Recoverable, Attempt: 1},
	NameApplyRetrySpec:           ApplyRetrySpec{MaxRetries: 5, MinBackoff: 240, ExecutionTimeout: 300},
	NameChangeFunction:           ChangeFunction{ContextName: "new-context", ProcessorName: "new-processor", Name: "handler", FunctionKind: KindEvent},
	NameMarkRecoverable:          MarkRecoverable{Recoverable: Unrecoverable},
}

var goldenEvents = map[string]Event{
	NameExecutionFailedCreated:  ExecutionFailedCreated{EventID: evtID, Function: fn, Error: goldenError, ExecuteAt: t0, RetryState: goldenState, RetrySpec: goldenSpec, Recoverable: RecoverabilityUnknown},
	NameCompensationPrepared:    CompensationPrepared{EventID: evtID, Function: fn, RetryState: goldenState},
	NameExecutionFailedApplied:  ExecutionFailedApplied{Error: goldenError, ExecuteAt: 1735000180000, Recoverable: Recoverable, Attempt: 1},
	NameExecutionSuccessApplied: ExecutionSuccessApplied{ExecuteAt: 1735000180000, Attempt: 1},
	NameRetrySpecApplied:        RetrySpecApplied{MaxRetries: 5, MinBackoff: 240, ExecutionTimeout: 300},
	NameFunctionChanged:         FunctionChanged{Name: "handler", ProcessorName: "new-processor", ContextName: "new-context", FunctionKind: KindEvent},
	NameRecoverableMarked:       RecoverableMarked{Recoverable: Unrecoverable},
}

// golden compares data with the file, or writes it under -update.
func golden(t *testing.T, path string, data []byte) []byte {
	t.Helper()
	var pretty bytes.Buffer
	require.NoError(t, json.Indent(&pretty, data, "", "  "))
	pretty.WriteByte('\n')
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, pretty.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file %s is missing; run go test ./aggregate -update to create it", path)
	assert.Equal(t, string(want), pretty.String(), "encoding of %s changed; a published wire shape must not change", path)
	return want
}

func TestWireCommands(t *testing.T) {
	require.Len(t, goldenCommands, len(CommandNames), "every command has a golden file")
	for _, name := range CommandNames {
		t.Run(name, func(t *testing.T) {
			gotName, body, err := EncodeCommand(goldenCommands[name])
			require.NoError(t, err)
			assert.Equal(t, name, gotName)
			file := golden(t, filepath.Join(wireDir, "commands", name+".json"), body)
			back, err := DecodeCommand(name, file)
			require.NoError(t, err)
			assert.Equal(t, goldenCommands[name], back, "decode(golden) == value")
		})
	}
}

// goldenExtensions are the shapes amends added after the first goldens were
// published, each in a file of its own: name.variant.json.
var goldenExtensions = []struct {
	file string
	cmd  Command
}{
	{NameApplyExecutionSuccess + ".prepared_version", ApplyExecutionSuccess{ExecuteAt: 1735000180000, Attempt: 1, PreparedVersion: 2}},
	{NameApplyExecutionFailed + ".prepared_version", ApplyExecutionFailed{Error: goldenError, ExecuteAt: 1735000180000, Recoverable: Recoverable, Attempt: 1, PreparedVersion: 2}},
}

func TestWireCommandExtensions(t *testing.T) {
	for _, g := range goldenExtensions {
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

func TestWireEvents(t *testing.T) {
	require.Len(t, goldenEvents, len(EventNames), "every event has a golden file")
	for _, name := range EventNames {
		t.Run(name, func(t *testing.T) {
			gotName, body, err := EncodeEvent(goldenEvents[name])
			require.NoError(t, err)
			assert.Equal(t, name, gotName)
			file := golden(t, filepath.Join(wireDir, "events", name+".json"), body)
			back, err := DecodeEvent(name, file)
			require.NoError(t, err)
			assert.Equal(t, goldenEvents[name], back, "decode(golden) == value")
		})
	}
}

func TestWireState(t *testing.T) {
	s := given(goldenEvents[NameExecutionFailedCreated], goldenEvents[NameCompensationPrepared])
	body, err := json.Marshal(s)
	require.NoError(t, err)
	file := golden(t, filepath.Join(wireDir, "state.json"), body)
	var back State
	require.NoError(t, json.Unmarshal(file, &back))
	assert.Equal(t, s, back)
}

func TestDecodeWowState(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(wireDir, "wow-e2e-state.json"))
	require.NoError(t, err)
	var s State
	require.NoError(t, json.Unmarshal(data, &s))
	assert.Equal(t, State{
		ID: "E2E-TR-14", Status: StatusFailed, Recoverable: Recoverable,
		Error: ErrorDetails{ErrorCode: "E2E_ERROR", ErrorMsg: "Connection prematurely closed BEFORE response", StackTrace: "at e2e...", BindingErrors: []BindingError{}},
		EventID: EventID{ID: "event-e2e-14", Version: 656, AggregateID: WireAggregateID{
			ContextName: "openapi-service", AggregateName: "quotation", AggregateID: "quotation-e2e-14", TenantID: "(0)"}},
		ExecuteAt:  1735000000000,
		Function:   FunctionInfo{ContextName: "openapi-service", ProcessorName: "QuotationSaga", Name: "onQuotationApplied", FunctionKind: KindEvent},
		RetrySpec:  RetrySpec{MaxRetries: 3, MinBackoff: 180, ExecutionTimeout: 120},
		RetryState: RetryState{NextRetryAt: 1735000180000, Retries: 1, RetryAt: 1735000000000, TimeoutAt: 1735000120000},
	}, s)
	assert.True(t, s.IsBelowRetryThreshold() && s.IsRetryable(), "the derived fields agree with the document")
}

func TestDecodeCommandErrors(t *testing.T) {
	cases := []struct{ name, body, msg, field string }{
		{"nope", `{}`, `unknown ExecutionFailed command "nope"`, ""},
		{NameApplyRetrySpec, `{"maxRetries":5,"minBackoff":240}`, "apply_retry_spec requires the field executionTimeout.", "executionTimeout"},
		{NameMarkRecoverable, `{"recoverable":null}`, "mark_recoverable requires the field recoverable.", "recoverable"},
		{NameMarkRecoverable, `{"recoverable":"sometimes"}`, `recoverable must be RECOVERABLE, UNRECOVERABLE or UNKNOWN, got "sometimes".`, "recoverable"},
		{NameMarkRecoverable, `{"recoverable":5}`, `recoverable must be RECOVERABLE, UNRECOVERABLE or UNKNOWN, got number.`, "recoverable"},
		{NameApplyExecutionFailed, `{"error":{"errorCode":"X"},"executeAt":1,"recoverable":"maybe"}`, `recoverable must be RECOVERABLE, UNRECOVERABLE or UNKNOWN, got "maybe".`, "recoverable"},
		{NameApplyExecutionSuccess, `[1]`, "apply_execution_success body must be a JSON object, got array.", ""},
		{NameApplyExecutionSuccess, `{"executeAt":1`, "apply_execution_success body must be a JSON object: unexpected end of JSON input.", ""},
		{NameApplyExecutionSuccess, `{"executeAt":1,"preparedVersion":-2}`, "preparedVersion must be a whole number from 0 to 18446744073709551615, got number -2.", "preparedVersion"},
		{NameApplyRetrySpec, `{"maxRetries":"5","minBackoff":1,"executionTimeout":1}`, "maxRetries must be a whole number from -2147483648 to 2147483647, got string.", "maxRetries"},
		{NameApplyRetrySpec, `{"maxRetries":2147483648,"minBackoff":1,"executionTimeout":1}`, "maxRetries must be a whole number from -2147483648 to 2147483647, got number 2147483648.", "maxRetries"},
		{NameApplyRetrySpec, `{"maxRetries":1,"minBackoff":1.5,"executionTimeout":1}`, "minBackoff must be a whole number from -2147483648 to 2147483647, got number 1.5.", "minBackoff"},
		{NameCreateExecutionFailed, `{"eventId":{},"function":{},"error":{}}`, "create_execution_failed requires the field executeAt.", "executeAt"},
		{NameCreateExecutionFailed, `{"eventId":"e","function":{},"error":{},"executeAt":1}`, "eventId must be a JSON object, got string.", "eventId"},
		{NameCreateExecutionFailed, `{"eventId":{"version":-1},"function":{},"error":{},"executeAt":1}`, "eventId.version must be a whole number from 0 to 18446744073709551615, got number -1.", "eventId.version"},
		{NameCreateExecutionFailed, `{"eventId":{},"function":{"functionKind":"LAMBDA"},"error":{},"executeAt":1}`, `function.functionKind must be COMMAND, SOURCING, EVENT, STATE_EVENT or ERROR, got "LAMBDA".`, "function.functionKind"},
		{NameCreateExecutionFailed, `{"eventId":{},"function":{},"error":{"bindingErrors":{}},"executeAt":1}`, "error.bindingErrors must be a JSON array, got object.", "error.bindingErrors"},
		{NameCreateExecutionFailed, `{"eventId":{},"function":{},"error":{},"executeAt":1,"retrySpec":{"maxRetries":true}}`, "retrySpec.maxRetries must be a whole number from -2147483648 to 2147483647, got bool.", "retrySpec.maxRetries"},
		{NameChangeFunction, `{"functionKind":"X","contextName":"a","processorName":"b","name":"c"}`, `functionKind must be COMMAND, SOURCING, EVENT, STATE_EVENT or ERROR, got "X".`, "functionKind"},
	}
	for _, c := range cases {
		_, err := DecodeCommand(c.name, []byte(c.body))
		require.ErrorIs(t, err, ErrIllegalArgument, "%s %s", c.name, c.body)
		assert.ErrorContains(t, err, c.msg)
		assert.Equal(t, c.field, ErrorField(err), "the field of %s %s", c.name, c.body)
		assert.Equal(t, c.field, ErrorField(fmt.Errorf("wrapped: %w", err)), "ErrorField looks through wrapping")
		for _, internal := range []string{"Go ", "aggregate.", "int32", "uint64", "json:"} {
			assert.NotContains(t, err.Error(), internal, "%s %s: no Go internals in %q", c.name, c.body, err)
		}
	}
	c, err := DecodeCommand(NamePrepareCompensation, nil)
	require.NoError(t, err, "an empty body is {}")
	assert.Equal(t, PrepareCompensation{}, c)
	c, err = DecodeCommand(NameMarkRecoverable, []byte(`{"recoverable":"recoverable"}`))
	require.NoError(t, err)
	assert.Equal(t, MarkRecoverable{Recoverable: Recoverable}, c, "enums are read case-insensitively")
}

// Decide's field errors name their field too.
func TestDecideErrorsNameTheirField(t *testing.T) {
	cases := []struct {
		when  Command
		field string
	}{
		{func() Command { c := create; c.EventID.Version = 0; return c }(), "eventId.version"},
		{func() Command { c := create; c.EventID.AggregateID.AggregateID = ""; return c }(), "eventId.aggregateId.aggregateId"},
		{func() Command { c := create; c.Function.Name = " "; return c }(), "function.name"},
		{func() Command { c := create; c.Error.ErrorCode = ""; return c }(), "error.errorCode"},
		{func() Command { c := create; c.ExecuteAt = -1; return c }(), "executeAt"},
		{func() Command { c := create; c.RetrySpec = &RetrySpec{MinBackoff: -1}; return c }(), "retrySpec.minBackoff"},
		{ApplyRetrySpec{MaxRetries: -1}, "maxRetries"},
		{ApplyRetrySpec{ExecutionTimeout: -1}, "executionTimeout"},
		{ChangeFunction{FunctionKind: KindEvent, ContextName: "c", ProcessorName: "", Name: "n"}, "processorName"},
		{MarkRecoverable{Recoverable: "MAYBE"}, "recoverable"},
		{PrepareCompensation{}, ""},
	}
	s := given(succeeded()...)
	for _, c := range cases {
		_, err := Decide(s, c.when, at(t0))
		require.Error(t, err, "%#v", c.when)
		assert.Equal(t, c.field, ErrorField(err), "%s: %v", c.when.CommandName(), err)
	}
	_, err := Decider{DefaultRetrySpec: &RetrySpec{MaxRetries: -1}}.Decide(State{ID: "r"}, create, at(t0))
	require.ErrorIs(t, err, ErrIllegalArgument)
	assert.Empty(t, ErrorField(err), "the injected spec is no field of the command")
	assert.Empty(t, ErrorField(errors.New("other")))
}

func TestDecodeEventErrors(t *testing.T) {
	cases := []struct{ name, body, msg, field string }{
		{NameExecutionFailedApplied, `{"error":{"errorCode":5},"executeAt":1}`, "event execution_failed_applied has a malformed body: error.errorCode must be a string, got number.", "error.errorCode"},
		{NameExecutionFailedApplied, `{"error":{},"executeAt":1,"recoverable":"x"}`, `event execution_failed_applied has a malformed body: recoverable must be RECOVERABLE, UNRECOVERABLE or UNKNOWN, got "x".`, "recoverable"},
		{NameExecutionFailedCreated, `{"eventId":{"version":-1}}`, "event execution_failed_created has a malformed body: eventId.version must be a whole number from 0 to 18446744073709551615, got number -1.", "eventId.version"},
		{NameExecutionFailedCreated, `{"function":{"functionKind":"x"}}`, `event execution_failed_created has a malformed body: function.functionKind must be COMMAND, SOURCING, EVENT, STATE_EVENT or ERROR, got "x".`, "function.functionKind"},
		{NameExecutionSuccessApplied, `[]`, "event execution_success_applied has a malformed body: it must be a JSON object, got array.", ""},
		{NameExecutionSuccessApplied, `{`, "event execution_success_applied has a malformed body: not valid JSON at offset 1.", ""},
	}
	for _, c := range cases {
		_, err := DecodeEvent(c.name, []byte(c.body))
		require.ErrorIs(t, err, ErrIllegalArgument, "%s %s", c.name, c.body)
		assert.EqualError(t, err, c.msg)
		assert.Equal(t, c.field, ErrorField(err))
		for _, internal := range []string{"Go ", "aggregate.", "jsontext", "json:"} {
			assert.NotContains(t, err.Error(), internal)
		}
	}
}

// The wire aggregate id and the event store's are one id in two shapes:
// the conversions lose nothing but the (fixed) tenant.
func TestWireAggregateIDConversions(t *testing.T) {
	for _, a := range []eventstore.AggregateID{
		{Context: "shop", Type: "order", ID: "o-1"},
		{Context: "billing", Type: "invoice", ID: "inv 2026/11 ünïcode"},
		{},
	} {
		w := WireAggregateIDOf(a)
		assert.Equal(t, WireAggregateID{ContextName: a.Context, AggregateName: a.Type, AggregateID: a.ID, TenantID: DefaultTenantID}, w)
		assert.Equal(t, a, w.StoreID(), "StoreID undoes WireAggregateIDOf")
	}
	var w WireAggregateID
	require.NoError(t, json.Unmarshal([]byte(`{"contextName":"c","aggregateName":"t","aggregateId":"i","tenantId":"other"}`), &w))
	assert.Equal(t, eventstore.AggregateID{Context: "c", Type: "t", ID: "i"}, w.StoreID(), "the wire names map to Context, Type and ID")
}
