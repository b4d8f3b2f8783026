package processor

import "errors"

var (
	// ErrInvalidOption reports an option or argument New cannot use. The
	// wrapping message names the value and the rule.
	ErrInvalidOption = errors.New("processor: invalid option")
	// ErrInvalidFunction reports a function that cannot be registered: a
	// blank or malformed name, no aggregate type, a STATE_EVENT function of
	// an aggregate type with no registered evolve, an event name its
	// aggregate types do not have (when Evolve was given their events), an
	// invalid retry spec. A message about a function begins with "function
	// <processor>.<name>:" and says what to change.
	ErrInvalidFunction = errors.New("processor: invalid function")
	// ErrDuplicateFunction reports a second function with the identity
	// (processor, name) of one already registered.
	ErrDuplicateFunction = errors.New("processor: duplicate function")
	// ErrRunning reports a registration after Run started, or a second Run.
	ErrRunning = errors.New("processor: already running")
	// ErrFunctionNotFound is the cause of a replay whose recorded function is
	// not registered here. Its record gets code FunctionNotFound,
	// UNRECOVERABLE, so an operator can ChangeFunction.
	ErrFunctionNotFound = errors.New("processor: function not found")
	// ErrEventNotFound is the cause of a replay whose original event cannot
	// be found in the store. Its record gets code EventNotFound,
	// UNRECOVERABLE.
	ErrEventNotFound = errors.New("processor: event not found")
)

// codedError is an error with a stable code, which the recorder stores as
// the record's errorCode.
type codedError struct {
	code string
	msg  string
	kind error
}

func (e *codedError) Error() string        { return e.msg }
func (e *codedError) Code() string         { return e.code }
func (e *codedError) Is(target error) bool { return target == e.kind }

var (
	// ErrHoldNotFound reports an operator action on a hold that does not
	// exist (never held, or released meanwhile).
	ErrHoldNotFound = errors.New("processor: hold not found")
	// ErrNotHeld reports a skip of an event the hold does not keep.
	ErrNotHeld = errors.New("processor: event not held")
)
