package recorder_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/fingerprint"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/rules"
)

// A call its circuit refused is described as a refusal, never as another
// event's failure: errorCode CircuitOpen, one fingerprint of its own for
// all of the function's refusals, RECOVERABLE whatever the last failure's
// class (the event was never tried), and a message that says so and shows
// the circuit's last real failure as such.
func TestDescribeCircuitOpen(t *testing.T) {
	r, err := recorder.New(&flaky{}, recorder.WithModule("example.com/shop"))
	require.NoError(t, err)

	real, rec := r.Describe(fn, failure.Unrecoverable(errBoom), failure.Rules{})
	require.Equal(t, aggregate.Unrecoverable, rec)
	last := circuit.Failure{Code: real.ErrorCode, Message: real.ErrorMsg, Fingerprint: real.Fingerprint, Recoverable: aggregate.Unrecoverable}
	open := &circuit.OpenError{Function: circuit.Of(fn), Phase: circuit.Open, Since: time.UnixMilli(t0), Last: last, IncidentFrom: t0 - 1000}
	d, rec := r.Describe(fn, open, failure.Rules{})
	assert.Equal(t, circuit.ErrorCode, d.ErrorCode)
	assert.Equal(t, aggregate.Recoverable, rec, "never tried: retryable, whatever another event's class")
	assert.NotEqual(t, real.Fingerprint, d.Fingerprint, "not grouped with the real failure")
	assert.Equal(t, r.RefusalFingerprint(fn, t0-1000), d.Fingerprint)
	assert.NotEqual(t, r.RefusalFingerprint(fn, t0+60000), d.Fingerprint, "one group per incident")
	assert.True(t, fingerprint.Valid(d.Fingerprint))
	assert.Contains(t, d.ErrorMsg, "not called: the circuit of "+circuit.Of(fn).String()+" is OPEN since")
	assert.Contains(t, d.ErrorMsg, "the event was never tried. The circuit's last real failure (of another event): "+errBoom.Error())

	forced := &circuit.OpenError{Function: circuit.Of(fn), Phase: circuit.Open, Since: time.UnixMilli(t0), Forced: true, IncidentFrom: t0 - 1000}
	d2, rec := r.Describe(fn, forced, failure.Rules{})
	assert.Equal(t, d.Fingerprint, d2.Fingerprint, "one fingerprint for the function's refusals of an incident")
	assert.Contains(t, d2.ErrorMsg, ", opened by an operator; the event was never tried")
	assert.NotContains(t, d2.ErrorMsg, "last real failure")
	assert.Equal(t, aggregate.Recoverable, rec)
}

// A fingerprint rule never matches a refused call's record: marking the
// "550 bad address" fingerprint UNRECOVERABLE leaves the records of
// healthy events the circuit refused retryable.
func TestFingerprintRulesNeverMatchRefusals(t *testing.T) {
	r0, err := recorder.New(accept{})
	require.NoError(t, err)
	real, _ := r0.Describe(fn, errBoom, failure.Rules{})
	set := rules.NewSet([]api.Rule{{ID: "r-000000000001", Action: rules.MarkUnrecoverable, CreatedAt: 1, Reason: "bad address",
		Match: api.RuleMatch{Fingerprint: real.Fingerprint}}})
	var sent []aggregate.Command
	r, err := recorder.New(commands(func(c aggregate.Command) { sent = append(sent, c) }), recorder.WithRules(set))
	require.NoError(t, err)
	open := &circuit.OpenError{Function: circuit.Of(fn), Phase: circuit.Open, Since: time.UnixMilli(t0),
		Last: circuit.Failure{Code: real.ErrorCode, Message: real.ErrorMsg, Fingerprint: real.Fingerprint}}
	for _, e := range []error{errBoom, open} {
		out, err := r.Record(t.Context(), processor.Execution{EventID: eventID, Function: &fn, Err: e, ExecuteAt: time.UnixMilli(t0)})
		require.NoError(t, err)
		require.Equal(t, processor.OutcomeRecorded, out)
	}
	require.Len(t, sent, 2)
	assert.Equal(t, aggregate.Unrecoverable, sent[0].(aggregate.CreateExecutionFailed).Recoverable, "the rule marks the real failure")
	refused := sent[1].(aggregate.CreateExecutionFailed)
	assert.Equal(t, circuit.ErrorCode, refused.Error.ErrorCode)
	assert.Equal(t, aggregate.Recoverable, refused.Recoverable, "and leaves the refusal alone")
}

// commands is an executor that hands each command to f and accepts it.
type commands func(aggregate.Command)

func (c commands) Execute(_ context.Context, _ string, cmd aggregate.Command, _ aggregate.Meta) (aggregate.Result, error) {
	c(cmd)
	return aggregate.Result{}, nil
}

// The processor classifies a failure once (Execution.Recoverable, by the
// function's rules, as its circuit weighed it): the record carries that
// classification; without one the recorder classifies by Rules.
func TestRecordUsesTheProcessorsClassification(t *testing.T) {
	var sent []aggregate.Command
	r, err := recorder.New(commands(func(c aggregate.Command) { sent = append(sent, c) }))
	require.NoError(t, err)
	for _, x := range []processor.Execution{
		{EventID: eventID, Function: &fn, Err: errBoom, ExecuteAt: time.UnixMilli(t0), Recoverable: aggregate.Unrecoverable},
		{EventID: eventID, Function: &fn, Err: errBoom, ExecuteAt: time.UnixMilli(t0)},
	} {
		_, err := r.Record(t.Context(), x)
		require.NoError(t, err)
	}
	require.Len(t, sent, 2)
	assert.Equal(t, aggregate.Unrecoverable, sent[0].(aggregate.CreateExecutionFailed).Recoverable, "the processor's")
	assert.Equal(t, aggregate.RecoverabilityUnknown, sent[1].(aggregate.CreateExecutionFailed).Recoverable, "the recorder's, by no rules: a plain error")
}

// A refused replay of a record that failed for a real reason keeps that
// failure (Execution.Prior): its code, fingerprint and class, the refusal
// told in its message, once however often it is refused.
func TestRefusedReplayKeepsTheRecordsFailure(t *testing.T) {
	var sent []aggregate.Command
	r, err := recorder.New(commands(func(c aggregate.Command) { sent = append(sent, c) }))
	require.NoError(t, err)
	prior := processor.PriorFailure{Error: aggregate.ErrorDetails{ErrorCode: "BadAddress", ErrorMsg: "550 no such mailbox", Fingerprint: "fp1-0123456789abcdef"},
		Recoverable: aggregate.RecoverabilityUnknown}
	open := &circuit.OpenError{Function: circuit.Of(fn), Phase: circuit.Open, Since: time.UnixMilli(t0)}
	comp := &processor.Compensation{ID: "rec-1", Attempt: 2}
	for range 2 {
		_, err := r.Record(t.Context(), processor.Execution{EventID: eventID, Function: &fn, Err: open, Compensation: comp, ExecuteAt: time.UnixMilli(t0), Prior: &prior})
		require.NoError(t, err)
		applied := sent[len(sent)-1].(aggregate.ApplyExecutionFailed)
		prior.Error = applied.Error // the next refusal sees the record as this one left it
	}
	applied := sent[len(sent)-1].(aggregate.ApplyExecutionFailed)
	assert.Equal(t, "BadAddress", applied.Error.ErrorCode)
	assert.Equal(t, "fp1-0123456789abcdef", applied.Error.Fingerprint)
	assert.Equal(t, aggregate.RecoverabilityUnknown, applied.Recoverable)
	assert.Equal(t, "550 no such mailbox [this replay was refused: the circuit of "+circuit.Of(fn).String()+" is OPEN since "+
		time.UnixMilli(t0).UTC().Format(time.RFC3339)+"]", applied.Error.ErrorMsg, "the note once")
}
