package aggregate

import (
	"errors"
	"time"
)

// Sentinels matched with errors.Is. The *Error that Decide returns wraps
// exactly one of them and carries the reference message.
var (
	// ErrIllegalState: the record's state does not allow the command (Wow's
	// IllegalStateException, error code "IllegalState").
	ErrIllegalState = errors.New("IllegalState")
	// ErrIllegalArgument: a command field breaks a rule (Wow's
	// IllegalArgumentException, error code "IllegalArgument").
	ErrIllegalArgument = errors.New("IllegalArgument")
	// ErrArithmetic: the retry math overflows 64-bit milliseconds (Wow's
	// ArithmeticException, error code "BadRequest").
	ErrArithmetic = errors.New("BadRequest")
	// ErrNotFound: the record does not exist.
	ErrNotFound = errors.New("NotFound")
	// ErrAlreadyRecorded: Create on a record that is FAILED or PREPARED. The
	// failure is already recorded; nothing changed.
	ErrAlreadyRecorded = errors.New("AlreadyRecorded")
	// ErrStaleAttempt: an execution result for an attempt that is no longer
	// the current one.
	ErrStaleAttempt = errors.New("StaleAttempt")
)

// Error is a rejected command: a kind (one of the sentinels), the message
// an operator sees and, when Decide refused it on an existing record, the
// state it decided on (see Details). An *Error is not changed after it is
// returned, so it is safe for concurrent use.
type Error struct {
	// Kind is the sentinel the error matches.
	Kind error
	// Message is the reference message, e.g. "ExecutionFailed can not retry.".
	Message string
	// Field is the JSON path of the command field the error is about, e.g.
	// "recoverable" or "eventId.version"; "" if it is about none. See
	// ErrorField.
	Field string

	// decided is the record Decide refused the command on; nil if the
	// record did not exist or the error did not come from Decide.
	decided *decision
}

// decision is what Decide saw when it refused a command.
type decision struct {
	decider Decider
	state   State
	now     time.Time
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Is reports whether target is e's kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Code is the error code of the kind: "IllegalState", "IllegalArgument",
// "BadRequest", "NotFound", "AlreadyRecorded" or "StaleAttempt".
func (e *Error) Code() string { return e.Kind.Error() }

// Details returns what an operator can act on when Decide (or a Service,
// which decides with it) refused a command on an existing record; nil when
// the error carries no state (the record did not exist, or the error did
// not come from Decide). The map is new on each call; its keys:
//
//   - "status" (string): FAILED, PREPARED or SUCCEEDED;
//   - "retries", "maxRetries" (int32): the attempts made and the limit of
//     scheduled ones;
//   - "timeoutAt", "nextRetryAt" (int64, epoch ms): when the current
//     attempt times out and when the next retry is due;
//   - "recoverable" (string): RECOVERABLE, UNRECOVERABLE or UNKNOWN;
//   - "accepted" ([]string, never nil): of the commands that prepare a
//     replay (prepare_compensation, force_prepare_compensation), the wire
//     names of those Decide accepts on the same state at the same instant,
//     e.g. [force_prepare_compensation] for a FAILED record at its retry
//     limit, [] for a SUCCEEDED one or a PREPARED one not yet timed out.
//     The settings commands (apply_retry_spec, change_function,
//     mark_recoverable) are accepted in every status, as in Wow, and are
//     not listed.
func (e *Error) Details() map[string]any {
	if e == nil || e.decided == nil {
		return nil
	}
	d := e.decided
	s := d.state
	return map[string]any{
		"status":      string(s.Status),
		"retries":     s.RetryState.Retries,
		"maxRetries":  s.RetrySpec.MaxRetries,
		"timeoutAt":   s.RetryState.TimeoutAt,
		"nextRetryAt": s.RetryState.NextRetryAt,
		"recoverable": string(s.Recoverable),
		"accepted":    d.decider.accepted(s, d.now),
	}
}

// replayCommands are the commands Details reports as accepted or not.
var replayCommands = []Command{PrepareCompensation{}, ForcePrepareCompensation{}}

// accepted returns the names of the replayCommands Decide accepts on s at
// now: the guards are asked, not copied.
func (d Decider) accepted(s State, now time.Time) []string {
	names := []string{}
	for _, c := range replayCommands {
		if _, err := d.decide(s, c, now); err == nil {
			names = append(names, c.CommandName())
		}
	}
	return names
}

// withDecision attaches the state a refusal was decided on to err, if it
// is an *Error and the record exists.
func (d Decider) withDecision(err error, s State, now time.Time) error {
	var e *Error
	if !s.Exists() || !errors.As(err, &e) || e.decided != nil {
		return err
	}
	e.decided = &decision{decider: d, state: s, now: now}
	return err
}

// ErrorField returns the JSON path of the command field that err (a
// DecodeCommand or Decide error, possibly wrapped) is about, e.g.
// "recoverable", "executeAt", "eventId.version" or "retrySpec.maxRetries";
// "" if err names no field.
func ErrorField(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

func illegalState(msg string) error    { return &Error{Kind: ErrIllegalState, Message: msg} }
func illegalArgument(msg string) error { return &Error{Kind: ErrIllegalArgument, Message: msg} }
func arithmetic(msg string) error      { return &Error{Kind: ErrArithmetic, Message: msg} }

// invalidField is an ErrIllegalArgument about the field at path.
func invalidField(path, msg string) error {
	return &Error{Kind: ErrIllegalArgument, Message: msg, Field: path}
}

// atField returns err with its field under prefix (e.g. "retrySpec."),
// for an *Error about a field; prefix "" means the error is about no field
// of the command.
func atField(prefix string, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Field == "" {
		return err
	}
	c := *e
	c.Field = ""
	if prefix != "" {
		c.Field = prefix + e.Field
	}
	return &c
}
