package recorder

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/fingerprint"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/rules"
)

// Executor runs commands on records; *aggregate.Service satisfies it.
type Executor interface {
	Execute(ctx context.Context, id string, c aggregate.Command, meta aggregate.Meta) (aggregate.Result, error)
}

// Recorder records executions on ExecutionFailed records through an
// Executor. It is safe for concurrent use.
type Recorder struct {
	exec    Executor
	o       options
	metrics Metrics
}

var (
	_ processor.FailureRecorder  = (*Recorder)(nil)
	_ processor.FailureDescriber = (*Recorder)(nil)
)

// New returns a Recorder sending its commands to exec. Invalid options
// return an error wrapping ErrInvalidOption.
func New(exec Executor, opts ...Option) (*Recorder, error) {
	if exec == nil {
		return nil, fmt.Errorf("executor is nil: %w", ErrInvalidOption)
	}
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &Recorder{exec: exec, o: o}, nil
}

// Metrics returns the recorder's counters.
func (r *Recorder) Metrics() *Metrics { return &r.metrics }

// Record records x (see the package documentation) and counts its outcome.
// It returns an error, matching ErrRecordingFailed, only with
// processor.OutcomeRecordingFailed.
func (r *Recorder) Record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	out, err := r.record(ctx, x)
	if c := r.metrics.counter(out); c != nil {
		c.Add(1)
	}
	return out, err
}

func (r *Recorder) record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	at := x.ExecuteAt
	if at.IsZero() {
		at = r.o.clock.Now()
	}
	executeAt := max(at.UnixMilli(), 1)
	run := runOf(ctx, x, executeAt)
	switch {
	case x.Err == nil && x.Compensation == nil:
		return processor.OutcomeNone, nil
	case x.Err == nil:
		return r.apply(ctx, x, aggregate.ApplyExecutionSuccess{ExecuteAt: executeAt, Attempt: x.Compensation.Attempt, PreparedVersion: x.Compensation.Prepared, Run: run})
	case x.Function == nil || x.Function.ProcessorName == "" || x.Function.Name == "" || x.Function.ContextName == "":
		return processor.OutcomeUnrecorded, nil
	case x.Waived:
		return processor.OutcomeWaived, nil
	}
	details, recoverable := r.failureOf(x)
	if x.Compensation != nil {
		return r.apply(ctx, x, aggregate.ApplyExecutionFailed{
			Error: details, ExecuteAt: executeAt, Recoverable: recoverable, Attempt: x.Compensation.Attempt,
			PreparedVersion: x.Compensation.Prepared, Run: run})
	}
	id := aggregate.RecordID(x.EventID.ID, *x.Function)
	cmd := aggregate.CreateExecutionFailed{
		EventID: x.EventID, Function: *x.Function, Error: details, ExecuteAt: executeAt,
		RetrySpec: x.RetrySpec, Recoverable: recoverable, Run: run,
	}
	meta := r.meta(uuid.NewString(), x)
	r.applyRules(x, details, at, &cmd, &meta)
	res, err := r.send(ctx, id, cmd, meta)
	switch {
	case err == nil:
		r.metrics.attempted(x, res)
		return processor.OutcomeRecorded, nil
	case errors.Is(err, aggregate.ErrAlreadyRecorded):
		return processor.OutcomeAlreadyRecorded, nil
	default:
		return processor.OutcomeRecordingFailed, attach(x.Err, fmt.Errorf("%s on ExecutionFailed %s: %w", cmd.CommandName(), id, err))
	}
}

// Describe returns what the record of f's failure err carries: its
// details (see Details) with their fingerprint, and its classification
// by rules (failure.Classify). The failure of a call f's circuit refused
// (a *circuit.OpenError) is about the refusal, not about another event's
// failure: errorCode CircuitOpen, a fingerprint of its own (one per
// function and incident: RefusalFingerprint), RECOVERABLE (its event was never tried),
// and a message that says so, with the circuit's last real failure shown
// as such. Safe for concurrent use.
func (r *Recorder) Describe(f aggregate.FunctionInfo, err error, rules failure.Rules) (aggregate.ErrorDetails, aggregate.Recoverability) {
	var open *circuit.OpenError
	if errors.As(err, &open) {
		return aggregate.ErrorDetails{ErrorCode: circuit.ErrorCode, ErrorMsg: open.Error(), Fingerprint: r.RefusalFingerprint(f, open.IncidentFrom)}, aggregate.Recoverable
	}
	return r.details(f, err), failure.Classify(err, rules)
}

// refusedReplay begins the note a refused replay adds to its record's
// own last failure.
const refusedReplay = " [this replay was refused: "

// details are err's details (Details) with their fingerprint.
func (r *Recorder) details(f aggregate.FunctionInfo, err error) aggregate.ErrorDetails {
	d := Details(err)
	d.Fingerprint = fingerprint.Of(f, d.ErrorCode, d.ErrorMsg, d.StackTrace, r.o.module)
	return d
}

// RefusalFingerprint is the fingerprint of the records of f's events its
// circuit refused in the incident that began at incidentFrom (epoch ms):
// one for all of them, never that of a real failure.
func (r *Recorder) RefusalFingerprint(f aggregate.FunctionInfo, incidentFrom int64) string {
	// The incident is in the code: a message's numbers are normalized away.
	return fingerprint.Of(f, circuit.ErrorCode+"@"+strconv.FormatInt(incidentFrom, 10), "refused by the circuit", "", r.o.module)
}

// apply sends a replay's result, fenced by its attempt and the version of
// its prepare, with a command id fixed by (command, record, attempt,
// prepare's version).
func (r *Recorder) apply(ctx context.Context, x processor.Execution, cmd aggregate.Command) (processor.Outcome, error) {
	c := x.Compensation
	commandID := uuid.NewString()
	if c.Attempt != 0 {
		// One command per prepared attempt, so a resend is recognised. The
		// prepare's version tells apart the attempts of a record re-opened
		// after it succeeded, whose attempt numbers start again at 1.
		commandID = fmt.Sprintf("%s:%s:%d@%d", cmd.CommandName(), c.ID, c.Attempt, c.Prepared)
	}
	res, err := r.send(ctx, c.ID, cmd, r.meta(commandID, x))
	switch {
	case err == nil:
		r.metrics.attempted(x, res)
		return processor.OutcomeApplied, nil
	case errors.Is(err, aggregate.ErrStaleAttempt), errors.Is(err, aggregate.ErrIllegalState), errors.Is(err, aggregate.ErrNotFound):
		r.metrics.Attempts.Stale.Add(1)
		return processor.OutcomeStale, nil
	default:
		return processor.OutcomeRecordingFailed, attach(x.Err, fmt.Errorf("%s on ExecutionFailed %s attempt %d: %w", cmd.CommandName(), c.ID, c.Attempt, err))
	}
}

func (r *Recorder) meta(commandID string, x processor.Execution) aggregate.Meta {
	m := aggregate.Meta{CommandID: commandID, Actor: r.o.actor}
	if x.Function != nil {
		m.Headers = map[string]string{"function": x.Function.ProcessorName + "." + x.Function.Name}
	}
	return m
}

// send executes cmd, retrying failed sends. A rejection by the record (an
// *aggregate.Error) is a decision, not a failed send, and is returned at
// once.
func (r *Recorder) send(ctx context.Context, id string, cmd aggregate.Command, meta aggregate.Meta) (aggregate.Result, error) {
	for attempt := 0; ; attempt++ {
		res, err := r.exec.Execute(ctx, id, cmd, meta)
		if err == nil || errors.As(err, new(*aggregate.Error)) {
			return res, err
		}
		if attempt >= r.o.retries || ctx.Err() != nil {
			return res, err
		}
		r.metrics.SendRetries.Add(1)
		if r.o.sleep(ctx, r.o.backoff.Delay(attempt)) != nil {
			return res, err
		}
	}
}

// failureOf describes x's failure: a refused replay of a record that
// failed for a real reason keeps that failure, its message telling the
// refusal; a failure the processor classified keeps its class.
func (r *Recorder) failureOf(x processor.Execution) (details aggregate.ErrorDetails, recoverable aggregate.Recoverability) {
	var open *circuit.OpenError
	switch {
	case errors.As(x.Err, &open) && x.Prior != nil:
		// A refused replay of a record that failed for a real reason: the
		// record keeps that failure; the message tells the refusal.
		details, recoverable = x.Prior.Error, x.Prior.Recoverable
		own, _, _ := strings.Cut(x.Prior.Error.ErrorMsg, refusedReplay) // the last refusal's note, once
		details.ErrorMsg = fmt.Sprintf("%s%sthe circuit of %s is %s since %s]", own, refusedReplay, open.Function, open.Phase, open.Since.UTC().Format(time.RFC3339))
	case x.Recoverable != "" && open == nil:
		details, recoverable = r.details(*x.Function, x.Err), x.Recoverable // the processor classified it, once
	default:
		details, recoverable = r.Describe(*x.Function, x.Err, x.Rules)
	}
	return details, recoverable
}

// applyRules applies the first operator rule that matches x's failure at
// at to the command and its meta.
func (r *Recorder) applyRules(x processor.Execution, details aggregate.ErrorDetails, at time.Time, cmd *aggregate.CreateExecutionFailed, meta *aggregate.Meta) {
	if r.o.rules == nil {
		return
	}
	match := rules.Failure{Function: *x.Function, ErrorCode: details.ErrorCode, Fingerprint: details.Fingerprint}
	if details.ErrorCode == circuit.ErrorCode {
		match.Fingerprint = "" // a refusal is no failure of the fingerprint's kind
	}
	if rule, ok := r.o.rules.Match(match, at); ok {
		rules.ApplyToCreate(rule, cmd, aggregate.DefaultRetrySpec)
		meta.Headers["rule"] = rule.ID
		meta.Reason = fmt.Sprintf("rule %s (%s): %s", rule.ID, rule.Action, rule.Reason)
		r.metrics.RuleMatches.Add(1)
	}
}
