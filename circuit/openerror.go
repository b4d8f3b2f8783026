package circuit

import (
	"errors"
	"fmt"
	"time"
)

// ErrorCode is the errorCode of the record of an event whose function was
// not called because its circuit was open: a value of the record's
// errorCode, not a new event type, so the record is an ordinary
// ExecutionFailed.
const ErrorCode = "CircuitOpen"

// ErrOpen matches every OpenError (errors.Is).
var ErrOpen = errors.New("circuit: open")

// OpenError is the error of a call a circuit refused. Its Code is
// ErrorCode; its message, the record's, shows the circuit's last real
// failure (Last) as such: the record is about the refusal.
type OpenError struct {
	Function Function
	Phase    Phase
	Since    time.Time
	Forced   bool
	Last     Failure
	// IncidentFrom is when the circuit's incident began (epoch ms): the
	// refusals of one incident are one group (package recorder).
	IncidentFrom int64
}

// Error says that the function was not called, since when its circuit is
// not closed, and what the circuit's last real failure was, as another
// event's: the message of a refused call's record (package recorder).
func (e *OpenError) Error() string {
	by := ""
	if e.Forced {
		by = ", opened by an operator"
	}
	msg := fmt.Sprintf("not called: the circuit of %s is %s since %s%s; the event was never tried", e.Function, e.Phase, e.Since.UTC().Format(time.RFC3339), by)
	if e.Last.Message != "" {
		msg += ". The circuit's last real failure (of another event): " + e.Last.Message
	}
	return msg
}

// Code returns ErrorCode.
func (e *OpenError) Code() string { return ErrorCode }

// Is reports whether target is ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// openError is st's refusal.
func openError(st State) *OpenError {
	e := &OpenError{Function: st.Function, Phase: st.Phase, Since: time.UnixMilli(st.Since), Forced: st.Forced, IncidentFrom: st.Incident.From}
	if st.Last != nil {
		e.Last = *st.Last
	}
	return e
}
