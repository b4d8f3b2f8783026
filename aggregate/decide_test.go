package aggregate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/amends-dev/amends/aggregate"
)

// t0 is the creation time of every record in these tests.
const t0 = int64(1_735_000_000_000)

func at(ms int64) time.Time { return time.UnixMilli(ms) }

var (
	fn     = FunctionInfo{FunctionKind: KindEvent, ContextName: "order", ProcessorName: "OrderProjector", Name: "onEvent"}
	evtID  = EventID{ID: "evt-1", AggregateID: WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-1", TenantID: DefaultTenantID}, Version: 3, Seq: 42}
	boom   = ErrorDetails{ErrorCode: "IllegalState", ErrorMsg: "boom", StackTrace: "main.go:1"}
	create = CreateExecutionFailed{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0}
)

// given builds a state from events, as the aggregate would have.
func given(events ...Event) State { return EvolveAll(State{ID: "rec-1"}, events...) }

func created(spec RetrySpec, retries int32) []Event {
	rs, _ := NextRetryState(spec, 0, t0)
	out := []Event{ExecutionFailedCreated{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetryState: rs, RetrySpec: spec, Recoverable: RecoverabilityUnknown}}
	for r := int32(1); r <= retries; r++ {
		prs, _ := NextRetryState(spec, r, t0+int64(r)*1000)
		out = append(out, CompensationPrepared{EventID: evtID, Function: fn, RetryState: prs}, ExecutionFailedApplied{Error: boom, ExecuteAt: t0 + int64(r)*1000 + 1, Recoverable: RecoverabilityUnknown})
	}
	return out
}

// The record after the k-th prepare at time t0+k s, still PREPARED.
func preparedAfter(spec RetrySpec, k int32) []Event {
	ev := created(spec, k-1)
	rs, _ := NextRetryState(spec, k, t0+int64(k)*1000)
	return append(ev, CompensationPrepared{EventID: evtID, Function: fn, RetryState: rs})
}

func succeeded() []Event {
	return append(preparedAfter(DefaultRetrySpec, 1), ExecutionSuccessApplied{ExecuteAt: t0 + 5000})
}

type gwt struct {
	name  string
	given []Event
	when  Command
	now   int64
	then  []Event // expected events, when err is nil
	err   error   // expected sentinel
	msg   string  // expected message
}

func run(t *testing.T, cases []gwt) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state := State{ID: "rec-1"}
			if c.given != nil {
				state = given(c.given...)
			}
			events, err := Decide(state, c.when, at(c.now))
			if c.err != nil {
				require.ErrorIs(t, err, c.err, "expected a %v rejection", c.err)
				assert.EqualError(t, err, c.msg)
				assert.Empty(t, events, "a rejected command yields no events")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.then, events)
		})
	}
}

func TestCreate(t *testing.T) {
	spec := RetrySpec{MaxRetries: 3, MinBackoff: 60, ExecutionTimeout: 30}
	withSpec := create
	withSpec.RetrySpec = &spec
	withSpec.Recoverable = Recoverable
	run(t, []gwt{
		{name: "new record gets the default spec", when: create, then: []Event{ExecutionFailedCreated{
			EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: DefaultRetrySpec, Recoverable: RecoverabilityUnknown,
			RetryState: RetryState{Retries: 0, RetryAt: t0, TimeoutAt: t0 + 120_000, NextRetryAt: t0 + 180_000},
		}}},
		{name: "new record with its own spec and class", when: withSpec, then: []Event{ExecutionFailedCreated{
			EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: spec, Recoverable: Recoverable,
			RetryState: RetryState{Retries: 0, RetryAt: t0, TimeoutAt: t0 + 30_000, NextRetryAt: t0 + 60_000},
		}}},
		{name: "FAILED record: already recorded", given: created(DefaultRetrySpec, 0), when: create,
			err: ErrAlreadyRecorded, msg: "ExecutionFailed rec-1 already records this failure and is FAILED."},
		{name: "PREPARED record: already recorded", given: preparedAfter(DefaultRetrySpec, 1), when: create,
			err: ErrAlreadyRecorded, msg: "ExecutionFailed rec-1 already records this failure and is PREPARED."},
		{name: "SUCCEEDED record re-opens from retry 0", given: succeeded(), when: withSpec, now: t0 + 9000, then: []Event{ExecutionFailedCreated{
			EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: spec, Recoverable: Recoverable,
			RetryState: RetryState{Retries: 0, RetryAt: t0, TimeoutAt: t0 + 30_000, NextRetryAt: t0 + 60_000},
		}}},
		{name: "negative maxRetries", when: func() Command { c := create; c.RetrySpec = &RetrySpec{MaxRetries: -1}; return c }(),
			err: ErrIllegalArgument, msg: "maxRetries must be greater than or equal to 0."},
		{name: "negative minBackoff", when: func() Command { c := create; c.RetrySpec = &RetrySpec{MinBackoff: -1}; return c }(),
			err: ErrIllegalArgument, msg: "minBackoff must be greater than or equal to 0."},
		{name: "negative executionTimeout", when: func() Command { c := create; c.RetrySpec = &RetrySpec{ExecutionTimeout: -1}; return c }(),
			err: ErrIllegalArgument, msg: "executionTimeout must be greater than or equal to 0."},
		{name: "backoff overflows at maxRetries", when: func() Command {
			c := create
			c.RetrySpec = &RetrySpec{MaxRetries: 62, MinBackoff: 180, ExecutionTimeout: 1}
			return c
		}(), err: ErrArithmetic, msg: "long overflow"},
		{name: "63 retries exceed the range", when: func() Command {
			c := create
			c.RetrySpec = &RetrySpec{MaxRetries: 63, MinBackoff: 1}
			return c
		}(), err: ErrArithmetic, msg: "Retry backoff exceeds the supported millisecond range."},
		{name: "minBackoff 0 never overflows", when: func() Command {
			c := create
			c.RetrySpec = &RetrySpec{MaxRetries: 2147483647, MinBackoff: 0, ExecutionTimeout: 0}
			return c
		}(), then: []Event{ExecutionFailedCreated{
			EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0, RetrySpec: RetrySpec{MaxRetries: 2147483647}, Recoverable: RecoverabilityUnknown,
			RetryState: RetryState{Retries: 0, RetryAt: t0, TimeoutAt: t0, NextRetryAt: t0},
		}}},
		{name: "blank event id", when: func() Command { c := create; c.EventID.ID = " "; return c }(),
			err: ErrIllegalArgument, msg: "eventId.id must not be blank."},
		{name: "version 0", when: func() Command { c := create; c.EventID.Version = 0; return c }(),
			err: ErrIllegalArgument, msg: "eventId.version must be greater than or equal to 1, got 0."},
		{name: "blank processor", when: func() Command { c := create; c.Function.ProcessorName = ""; return c }(),
			err: ErrIllegalArgument, msg: "function.processorName must not be blank."},
		{name: "unknown kind", when: func() Command { c := create; c.Function.FunctionKind = "LAMBDA"; return c }(),
			err: ErrIllegalArgument, msg: `function.functionKind must be COMMAND, SOURCING, EVENT, STATE_EVENT or ERROR, got "LAMBDA".`},
		{name: "blank error code", when: func() Command { c := create; c.Error.ErrorCode = ""; return c }(),
			err: ErrIllegalArgument, msg: "error.errorCode must not be blank."},
		{name: "no executeAt", when: func() Command { c := create; c.ExecuteAt = 0; return c }(),
			err: ErrIllegalArgument, msg: "executeAt must be an epoch-millisecond time greater than 0, got 0."},
	})
}

func TestPrepare(t *testing.T) {
	spec := DefaultRetrySpec
	failed := created(spec, 0)
	prepared := preparedAfter(spec, 1) // timeoutAt = t0+1s+120s
	timeoutAt := t0 + 1000 + 120_000
	atLimit := created(spec, 10)
	now := t0 + 500_000
	want := func(retries int32, now int64) []Event {
		rs, err := NextRetryState(spec, retries, now)
		require.NoError(t, err)
		return []Event{CompensationPrepared{EventID: evtID, Function: fn, RetryState: rs}}
	}
	run(t, []gwt{
		{name: "FAILED", given: failed, when: PrepareCompensation{}, now: now, then: want(1, now)},
		{name: "FAILED before nextRetryAt (manual prepare ignores it)", given: failed, when: PrepareCompensation{}, now: t0 + 1, then: want(1, t0+1)},
		{name: "PREPARED not timed out", given: prepared, when: PrepareCompensation{}, now: timeoutAt - 1,
			err: ErrIllegalState, msg: "ExecutionFailed can not retry."},
		{name: "PREPARED at exactly timeoutAt is not timed out", given: prepared, when: PrepareCompensation{}, now: timeoutAt,
			err: ErrIllegalState, msg: "ExecutionFailed can not retry."},
		{name: "PREPARED timed out", given: prepared, when: PrepareCompensation{}, now: timeoutAt + 1, then: want(2, timeoutAt+1)},
		{name: "retries == maxRetries", given: atLimit, when: PrepareCompensation{}, now: now,
			err: ErrIllegalState, msg: "ExecutionFailed can not retry."},
		{name: "SUCCEEDED", given: succeeded(), when: PrepareCompensation{}, now: now,
			err: ErrIllegalState, msg: "ExecutionFailed can not retry."},
		{name: "missing record", when: PrepareCompensation{}, now: now, err: ErrNotFound, msg: "ExecutionFailed rec-1 not found."},
		{name: "force: FAILED at the limit goes to 11 of 10", given: atLimit, when: ForcePrepareCompensation{}, now: now, then: want(11, now)},
		{name: "force: PREPARED not timed out", given: prepared, when: ForcePrepareCompensation{}, now: timeoutAt,
			err: ErrIllegalState, msg: "ExecutionFailed can not force retry."},
		{name: "force: PREPARED timed out", given: prepared, when: ForcePrepareCompensation{}, now: timeoutAt + 1, then: want(2, timeoutAt+1)},
		{name: "force: SUCCEEDED", given: succeeded(), when: ForcePrepareCompensation{}, now: now,
			err: ErrIllegalState, msg: "ExecutionFailed can not force retry."},
		{name: "force: backoff overflow far beyond the limit", given: append(created(RetrySpec{MaxRetries: 0, MinBackoff: 1, ExecutionTimeout: 1}, 0),
			CompensationPrepared{RetryState: RetryState{Retries: 62, RetryAt: t0, TimeoutAt: t0}}, ExecutionFailedApplied{Error: boom, ExecuteAt: t0}),
			when: ForcePrepareCompensation{}, now: now, err: ErrArithmetic, msg: "Retry backoff exceeds the supported millisecond range."},
	})
}

func TestApplyResults(t *testing.T) {
	prepared := preparedAfter(DefaultRetrySpec, 2) // attempt 2
	other := ErrorDetails{ErrorCode: "Timeout", ErrorMsg: "slow"}
	run(t, []gwt{
		{name: "success on PREPARED", given: prepared, when: ApplyExecutionSuccess{ExecuteAt: t0 + 9}, then: []Event{ExecutionSuccessApplied{ExecuteAt: t0 + 9}}},
		{name: "success with the current attempt", given: prepared, when: ApplyExecutionSuccess{ExecuteAt: t0 + 9, Attempt: 2}, then: []Event{ExecutionSuccessApplied{ExecuteAt: t0 + 9, Attempt: 2}}},
		{name: "success with a stale attempt", given: prepared, when: ApplyExecutionSuccess{ExecuteAt: t0 + 9, Attempt: 1},
			err: ErrStaleAttempt, msg: "ExecutionFailed attempt 1 is stale; the current attempt is 2."},
		{name: "success on FAILED", given: created(DefaultRetrySpec, 1), when: ApplyExecutionSuccess{ExecuteAt: t0 + 9},
			err: ErrIllegalState, msg: "ExecutionFailed is not prepared."},
		{name: "success on SUCCEEDED", given: succeeded(), when: ApplyExecutionSuccess{ExecuteAt: t0 + 9},
			err: ErrIllegalState, msg: "ExecutionFailed is not prepared."},
		{name: "failure on PREPARED defaults to UNKNOWN", given: prepared, when: ApplyExecutionFailed{Error: other, ExecuteAt: t0 + 9},
			then: []Event{ExecutionFailedApplied{Error: other, ExecuteAt: t0 + 9, Recoverable: RecoverabilityUnknown}}},
		{name: "failure with class and attempt", given: prepared, when: ApplyExecutionFailed{Error: other, ExecuteAt: t0 + 9, Recoverable: Unrecoverable, Attempt: 2},
			then: []Event{ExecutionFailedApplied{Error: other, ExecuteAt: t0 + 9, Recoverable: Unrecoverable, Attempt: 2}}},
		{name: "failure with a stale attempt", given: prepared, when: ApplyExecutionFailed{Error: other, ExecuteAt: t0 + 9, Attempt: 3},
			err: ErrStaleAttempt, msg: "ExecutionFailed attempt 3 is stale; the current attempt is 2."},
		{name: "failure on FAILED", given: created(DefaultRetrySpec, 0), when: ApplyExecutionFailed{Error: other, ExecuteAt: t0 + 9},
			err: ErrIllegalState, msg: "ExecutionFailed is not prepared."},
		{name: "failure on SUCCEEDED", given: succeeded(), when: ApplyExecutionFailed{Error: other, ExecuteAt: t0 + 9},
			err: ErrIllegalState, msg: "ExecutionFailed is not prepared."},
		{name: "failure without error code", given: prepared, when: ApplyExecutionFailed{ExecuteAt: t0 + 9},
			err: ErrIllegalArgument, msg: "error.errorCode must not be blank."},
		{name: "success on a missing record", when: ApplyExecutionSuccess{ExecuteAt: t0}, err: ErrNotFound, msg: "ExecutionFailed rec-1 not found."},
	})
}

func TestOperatorCommandsInEveryStatus(t *testing.T) {
	states := map[string][]Event{
		"FAILED": created(DefaultRetrySpec, 0), "PREPARED": preparedAfter(DefaultRetrySpec, 1), "SUCCEEDED": succeeded(),
	}
	moved := ChangeFunction{FunctionKind: KindEvent, ContextName: "new-context", ProcessorName: "new-processor", Name: "handler"}
	for status, history := range states {
		t.Run(status, func(t *testing.T) {
			run(t, []gwt{
				{name: "retry spec", given: history, when: ApplyRetrySpec{MaxRetries: 5, MinBackoff: 240, ExecutionTimeout: 300},
					then: []Event{RetrySpecApplied{MaxRetries: 5, MinBackoff: 240, ExecutionTimeout: 300}}},
				{name: "same retry spec is allowed", given: history, when: ApplyRetrySpec(RetrySpec(DefaultRetrySpec)),
					then: []Event{RetrySpecApplied(DefaultRetrySpec)}},
				{name: "invalid retry spec", given: history, when: ApplyRetrySpec{MaxRetries: -1},
					err: ErrIllegalArgument, msg: "maxRetries must be greater than or equal to 0."},
				{name: "change function", given: history, when: moved,
					then: []Event{FunctionChanged{Name: "handler", ProcessorName: "new-processor", ContextName: "new-context", FunctionKind: KindEvent}}},
				{name: "change to the same function", given: history, when: ChangeFunction(fn), err: ErrIllegalArgument,
					msg: "ExecutionFailed function is already changed to FunctionInfoData(functionKind=EVENT, contextName=order, processorName=OrderProjector, name=onEvent)."},
				{name: "change only the kind", given: history, when: ChangeFunction{FunctionKind: KindStateEvent, ContextName: "order", ProcessorName: "OrderProjector", Name: "onEvent"},
					then: []Event{FunctionChanged{Name: "onEvent", ProcessorName: "OrderProjector", ContextName: "order", FunctionKind: KindStateEvent}}},
				{name: "change to a blank name", given: history, when: ChangeFunction{FunctionKind: KindEvent, ContextName: "c", ProcessorName: "p", Name: " "},
					err: ErrIllegalArgument, msg: "name must not be blank."},
				{name: "mark unrecoverable", given: history, when: MarkRecoverable{Recoverable: Unrecoverable},
					then: []Event{RecoverableMarked{Recoverable: Unrecoverable}}},
				{name: "mark the same class", given: history, when: MarkRecoverable{Recoverable: RecoverabilityUnknown},
					err: ErrIllegalArgument, msg: "ExecutionFailed recoverable is already marked to UNKNOWN."},
				{name: "mark an unknown class", given: history, when: MarkRecoverable{Recoverable: "MAYBE"},
					err: ErrIllegalArgument, msg: `recoverable must be RECOVERABLE, UNRECOVERABLE or UNKNOWN, got "MAYBE".`},
			})
		})
	}
}

func TestEvolveKeepsWhatWowKeeps(t *testing.T) {
	s := given(preparedAfter(DefaultRetrySpec, 1)...)
	rs := s.RetryState
	s = Evolve(s, ExecutionFailedApplied{Error: ErrorDetails{ErrorCode: "X"}, ExecuteAt: t0 + 7, Recoverable: Unrecoverable})
	assert.Equal(t, StatusFailed, s.Status)
	assert.Equal(t, rs, s.RetryState, "a failed result keeps the retry state")
	assert.Equal(t, Unrecoverable, s.Recoverable, "and takes the new classification")

	s = Evolve(s, RetrySpecApplied{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 1})
	assert.Equal(t, rs, s.RetryState, "a new spec does not recompute the retry state")
	assert.False(t, s.IsBelowRetryThreshold(), "but the threshold is re-derived: 1 of 1")

	s = Evolve(Evolve(s, CompensationPrepared{RetryState: RetryState{Retries: 2}}), ExecutionSuccessApplied{ExecuteAt: t0 + 9})
	assert.Equal(t, StatusSucceeded, s.Status)
	assert.Equal(t, "X", s.Error.ErrorCode, "success keeps the last failure visible")
	assert.Equal(t, Unrecoverable, s.Recoverable)
	assert.Equal(t, t0+9, s.ExecuteAt)
	assert.Equal(t, evtID, s.EventID, "CompensationPrepared does not change the event id")
}

func TestInjectedDefaultSpecIsUsedAsGiven(t *testing.T) {
	zero := RetrySpec{}
	custom := RetrySpec{MaxRetries: 2, MinBackoff: 5, ExecutionTimeout: 7}
	own := RetrySpec{MaxRetries: 1, MinBackoff: 1, ExecutionTimeout: 1}
	withOwn := create
	withOwn.RetrySpec = &own
	cases := []struct {
		name    string
		decider Decider
		when    CreateExecutionFailed
		want    RetrySpec
	}{
		{"zero Decider: Wow's default", Decider{}, create, DefaultRetrySpec},
		{"injected 0/0/0 is used, not replaced by the default", Decider{DefaultRetrySpec: &zero}, create, zero},
		{"injected spec", Decider{DefaultRetrySpec: &custom}, create, custom},
		{"the command's own spec wins", Decider{DefaultRetrySpec: &zero}, withOwn, own},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			events, err := c.decider.Decide(State{ID: "rec-1"}, c.when, at(t0))
			require.NoError(t, err)
			rs, err := NextRetryState(c.want, 0, t0)
			require.NoError(t, err)
			assert.Equal(t, []Event{ExecutionFailedCreated{EventID: evtID, Function: fn, Error: boom, ExecuteAt: t0,
				RetrySpec: c.want, RetryState: rs, Recoverable: RecoverabilityUnknown}}, events)
		})
	}
	_, err := Decider{DefaultRetrySpec: &RetrySpec{MaxRetries: -1}}.Decide(State{ID: "rec-1"}, create, at(t0))
	assert.ErrorIs(t, err, ErrIllegalArgument, "an invalid injected spec fails the creation with Wow's message")
	assert.EqualError(t, err, "maxRetries must be greater than or equal to 0.")
}

// A record re-opened after it succeeded numbers its attempts from 1 again:
// the prepared version tells the attempts apart.
func TestResultsAreFencedByPreparedVersion(t *testing.T) {
	spec := DefaultRetrySpec
	rs1, _ := NextRetryState(spec, 1, t0+1000)
	history := EvolveAt(State{ID: "rec-1"}, 1, created(spec, 0)...)
	history = EvolveAt(history, 2, CompensationPrepared{EventID: evtID, Function: fn, RetryState: rs1}) // attempt 1 at v2
	history = EvolveAt(history, 3, ExecutionSuccessApplied{ExecuteAt: t0 + 2000, Attempt: 1})
	history = EvolveAt(history, 4, created(spec, 0)...)                                                 // re-opened
	history = EvolveAt(history, 5, CompensationPrepared{EventID: evtID, Function: fn, RetryState: rs1}) // attempt 1 again, at v5
	require.Equal(t, uint64(5), history.PreparedVersion)
	require.Equal(t, int32(1), history.Attempt())
	withoutVersion := given(preparedAfter(spec, 1)...) // evolved without versions: unknown

	cases := []struct {
		name  string
		state State
		when  Command
		then  []Event
		msg   string
	}{
		{name: "success of the attempt before the re-open is stale", state: history,
			when: ApplyExecutionSuccess{ExecuteAt: t0 + 9, Attempt: 1, PreparedVersion: 2},
			msg:  "ExecutionFailed attempt prepared at version 2 is stale; the current attempt 1 was prepared at version 5."},
		{name: "failure of the attempt before the re-open is stale", state: history,
			when: ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 9, Attempt: 1, PreparedVersion: 2},
			msg:  "ExecutionFailed attempt prepared at version 2 is stale; the current attempt 1 was prepared at version 5."},
		{name: "a prepared version alone is fenced", state: history,
			when: ApplyExecutionSuccess{ExecuteAt: t0 + 9, PreparedVersion: 2},
			msg:  "ExecutionFailed attempt prepared at version 2 is stale; the current attempt 1 was prepared at version 5."},
		{name: "the current attempt's result is applied", state: history,
			when: ApplyExecutionSuccess{ExecuteAt: t0 + 9, Attempt: 1, PreparedVersion: 5},
			then: []Event{ExecutionSuccessApplied{ExecuteAt: t0 + 9, Attempt: 1}}},
		{name: "a failure of the current attempt is applied", state: history,
			when: ApplyExecutionFailed{Error: boom, ExecuteAt: t0 + 9, Attempt: 1, PreparedVersion: 5},
			then: []Event{ExecutionFailedApplied{Error: boom, ExecuteAt: t0 + 9, Recoverable: RecoverabilityUnknown, Attempt: 1}}},
		{name: "without a prepared version: Wow's rule (and the attempt's)", state: history,
			when: ApplyExecutionSuccess{ExecuteAt: t0 + 9, Attempt: 1},
			then: []Event{ExecutionSuccessApplied{ExecuteAt: t0 + 9, Attempt: 1}}},
		{name: "a state that does not know its prepared version is not fenced by it", state: withoutVersion,
			when: ApplyExecutionSuccess{ExecuteAt: t0 + 9, Attempt: 1, PreparedVersion: 2},
			then: []Event{ExecutionSuccessApplied{ExecuteAt: t0 + 9, Attempt: 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			events, err := Decide(c.state, c.when, at(t0+5000))
			if c.msg != "" {
				require.ErrorIs(t, err, ErrStaleAttempt)
				assert.EqualError(t, err, c.msg)
				assert.Empty(t, events)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.then, events)
		})
	}
}

func TestEvolveForgetsAnOldPreparedVersion(t *testing.T) {
	s := EvolveAt(given(created(DefaultRetrySpec, 0)...), 2, CompensationPrepared{RetryState: RetryState{Retries: 1}})
	require.Equal(t, uint64(2), s.PreparedVersion)
	s = Evolve(Evolve(s, ExecutionFailedApplied{Error: boom, ExecuteAt: t0}), CompensationPrepared{RetryState: RetryState{Retries: 2}})
	assert.Zero(t, s.PreparedVersion, "a prepare evolved without its version leaves it unknown, not the old one")
	s = EvolveAt(s, 9, RecoverableMarked{Recoverable: Recoverable})
	assert.Zero(t, s.PreparedVersion, "only a prepare sets it")
}
