package aggregate

import (
	"fmt"
	"strings"
	"time"
)

// Decider decides commands with a default retry spec for creations that
// carry none. The zero Decider uses DefaultRetrySpec. A Decider is a value:
// safe for concurrent use.
type Decider struct {
	// DefaultRetrySpec applies to CreateExecutionFailed without a spec; nil
	// means the package's DefaultRetrySpec (10/180/120). Any spec set here
	// is used as given, 0/0/0 included, and is validated with the
	// creation (ValidateRetrySpec's errors).
	DefaultRetrySpec *RetrySpec
}

// Decide is Decider{}.Decide.
func Decide(s State, c Command, now time.Time) ([]Event, error) {
	return Decider{}.Decide(s, c, now)
}

// Decide returns the events command c produces on state s at time now, or
// the *Error that rejects it. It never changes s; apply the events with
// Evolve. The guards, in order, and their messages are Wow's (see the
// package documentation for what amends adds). A refusal on an existing
// record carries that state: see (*Error).Details.
func (d Decider) Decide(s State, c Command, now time.Time) ([]Event, error) {
	events, err := d.decide(s, c, now)
	if err != nil {
		return nil, d.withDecision(err, s, now)
	}
	return events, nil
}

func (d Decider) decide(s State, c Command, now time.Time) ([]Event, error) {
	if create, ok := c.(CreateExecutionFailed); ok {
		return d.create(s, create)
	}
	if c == nil {
		return nil, illegalArgument("command must not be nil.")
	}
	if !s.Exists() {
		return nil, &Error{Kind: ErrNotFound, Message: fmt.Sprintf("ExecutionFailed %s not found.", s.ID)}
	}
	switch c := c.(type) {
	case PrepareCompensation:
		if !s.CanRetry(now) {
			return nil, illegalState("ExecutionFailed can not retry.")
		}
		return prepare(s, now)
	case ForcePrepareCompensation:
		if !s.CanForceRetry(now) {
			return nil, illegalState("ExecutionFailed can not force retry.")
		}
		return prepare(s, now)
	case ApplyExecutionFailed:
		return applyFailed(s, c)
	case ApplyExecutionSuccess:
		return applySuccess(s, c)
	case ApplyRetrySpec:
		if err := ValidateRetrySpec(RetrySpec(c)); err != nil {
			return nil, err
		}
		return []Event{RetrySpecApplied(c)}, nil
	case ChangeFunction:
		return changeFunction(s, c)
	case MarkRecoverable:
		return markRecoverable(s, c)
	default:
		return nil, illegalArgument(fmt.Sprintf("unknown command %s; pass commands by value.", c.CommandName()))
	}
}

func (d Decider) create(s State, c CreateExecutionFailed) ([]Event, error) {
	if err := checkEventID(c.EventID); err != nil {
		return nil, err
	}
	if err := checkFunction("function.", c.Function); err != nil {
		return nil, err
	}
	if err := checkError("error", c.Error); err != nil {
		return nil, err
	}
	if err := checkExecuteAt(c.ExecuteAt); err != nil {
		return nil, err
	}
	if c.Recoverable != "" {
		if _, err := ParseRecoverability(string(c.Recoverable)); err != nil {
			return nil, err
		}
	}
	if err := checkRun(c.Run, c.ExecuteAt); err != nil {
		return nil, err
	}
	if s.Status == StatusFailed || s.Status == StatusPrepared {
		return nil, &Error{Kind: ErrAlreadyRecorded, Message: fmt.Sprintf("ExecutionFailed %s already records this failure and is %s.", s.ID, s.Status)}
	}
	spec := DefaultRetrySpec
	if d.DefaultRetrySpec != nil {
		spec = *d.DefaultRetrySpec
	}
	if c.RetrySpec != nil {
		spec = *c.RetrySpec
	}
	if err := ValidateRetrySpec(spec); err != nil {
		if c.RetrySpec == nil {
			return nil, atField("", err) // the injected spec is no field of the command
		}
		return nil, atField("retrySpec.", err)
	}
	rs, err := NextRetryStateOf(s.ID, spec, 0, c.ExecuteAt)
	if err != nil {
		return nil, err
	}
	return []Event{ExecutionFailedCreated{
		EventID: c.EventID, Function: c.Function, Error: c.Error, ExecuteAt: c.ExecuteAt,
		RetryState: rs, RetrySpec: spec, Recoverable: orUnknown(c.Recoverable), Run: runOf(c.Run),
	}}, nil
}

func prepare(s State, now time.Time) ([]Event, error) {
	retries, err := nextRetries(s.RetryState.Retries)
	if err != nil {
		return nil, err
	}
	rs, err := NextRetryStateOf(s.ID, s.RetrySpec, retries, now.UnixMilli())
	if err != nil {
		return nil, err
	}
	return []Event{CompensationPrepared{EventID: s.EventID, Function: s.Function, RetryState: rs}}, nil
}

// checkResult applies the guard of ApplyExecutionSuccess/Failed: the record
// is PREPARED, and (beyond Wow) a given attempt is the current one and a
// given prepared version is the one the current attempt was prepared at
// (when the state knows it).
func checkResult(s State, attempt int32, preparedVersion uint64) error {
	if s.Status != StatusPrepared {
		return illegalState("ExecutionFailed is not prepared.")
	}
	if attempt != 0 && attempt != s.Attempt() {
		return &Error{Kind: ErrStaleAttempt, Message: fmt.Sprintf("ExecutionFailed attempt %d is stale; the current attempt is %d.", attempt, s.Attempt())}
	}
	if preparedVersion != 0 && s.PreparedVersion != 0 && preparedVersion != s.PreparedVersion {
		return &Error{Kind: ErrStaleAttempt, Message: fmt.Sprintf(
			"ExecutionFailed attempt prepared at version %d is stale; the current attempt %d was prepared at version %d.",
			preparedVersion, s.Attempt(), s.PreparedVersion)}
	}
	return nil
}

// runOf copies r into the event, dropping an empty one.
func runOf(r *Run) *Run {
	if r == nil {
		return nil
	}
	return RunOf(*r)
}

func orUnknown(r Recoverability) Recoverability {
	if r == "" {
		return RecoverabilityUnknown
	}
	return r
}

func checkExecuteAt(ms int64) error {
	if ms <= 0 {
		return invalidField("executeAt", fmt.Sprintf("executeAt must be an epoch-millisecond time greater than 0, got %d.", ms))
	}
	return nil
}

func checkEventID(e EventID) error {
	for _, f := range []struct{ name, value string }{
		{"eventId.id", e.ID},
		{"eventId.aggregateId.contextName", e.AggregateID.ContextName},
		{"eventId.aggregateId.aggregateName", e.AggregateID.AggregateName},
		{"eventId.aggregateId.aggregateId", e.AggregateID.AggregateID},
	} {
		if strings.TrimSpace(f.value) == "" {
			return invalidField(f.name, f.name+" must not be blank.")
		}
	}
	if e.Version < 1 {
		return invalidField("eventId.version", fmt.Sprintf("eventId.version must be greater than or equal to 1, got %d.", e.Version))
	}
	return nil
}

// checkFunction requires non-blank names and a known kind; prefix names the
// fields in messages ("function." for a creation, "" for ChangeFunction).
func checkFunction(prefix string, f FunctionInfo) error {
	for _, fld := range []struct{ name, value string }{
		{"contextName", f.ContextName}, {"processorName", f.ProcessorName}, {"name", f.Name},
	} {
		if strings.TrimSpace(fld.value) == "" {
			return invalidField(prefix+fld.name, prefix+fld.name+" must not be blank.")
		}
	}
	if _, err := parseEnum(prefix+"functionKind", string(f.FunctionKind), FunctionKinds); err != nil {
		return err
	}
	return nil
}

func checkError(field string, e ErrorDetails) error {
	if strings.TrimSpace(e.ErrorCode) == "" {
		return invalidField(field+".errorCode", field+".errorCode must not be blank.")
	}
	return nil
}

// applyFailed decides a replay's failure on s: the attempt must be the
// prepared one and the error, time and run valid.
func applyFailed(s State, c ApplyExecutionFailed) ([]Event, error) {
	if err := checkResult(s, c.Attempt, c.PreparedVersion); err != nil {
		return nil, err
	}
	if err := checkError("error", c.Error); err != nil {
		return nil, err
	}
	if err := checkExecuteAt(c.ExecuteAt); err != nil {
		return nil, err
	}
	if err := checkRun(c.Run, c.ExecuteAt); err != nil {
		return nil, err
	}
	return []Event{ExecutionFailedApplied{Error: c.Error, ExecuteAt: c.ExecuteAt, Recoverable: orUnknown(c.Recoverable), Attempt: c.Attempt, Run: runOf(c.Run)}}, nil
}

// applySuccess decides a replay's success on s: the attempt must be the
// prepared one and the time and run valid.
func applySuccess(s State, c ApplyExecutionSuccess) ([]Event, error) {
	if err := checkResult(s, c.Attempt, c.PreparedVersion); err != nil {
		return nil, err
	}
	if err := checkExecuteAt(c.ExecuteAt); err != nil {
		return nil, err
	}
	if err := checkRun(c.Run, c.ExecuteAt); err != nil {
		return nil, err
	}
	return []Event{ExecutionSuccessApplied{ExecuteAt: c.ExecuteAt, Attempt: c.Attempt, Run: runOf(c.Run)}}, nil
}

// changeFunction decides a change of s's function to a valid, other one.
func changeFunction(s State, c ChangeFunction) ([]Event, error) {
	f := FunctionInfo(c)
	if err := checkFunction("", f); err != nil {
		return nil, err
	}
	if s.Function.SameFunction(f) {
		return nil, illegalArgument(fmt.Sprintf("ExecutionFailed function is already changed to %s.", s.Function))
	}
	return []Event{FunctionChanged{Name: c.Name, ProcessorName: c.ProcessorName, ContextName: c.ContextName, FunctionKind: c.FunctionKind}}, nil
}

// markRecoverable decides a new recoverability of s.
func markRecoverable(s State, c MarkRecoverable) ([]Event, error) {
	if _, err := ParseRecoverability(string(c.Recoverable)); err != nil {
		return nil, err
	}
	if s.Recoverable == c.Recoverable {
		return nil, illegalArgument(fmt.Sprintf("ExecutionFailed recoverable is already marked to %s.", s.Recoverable))
	}
	return []Event{RecoverableMarked(c)}, nil
}
