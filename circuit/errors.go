package circuit

import "errors"

var (
	// ErrInvalidOption reports a policy or option that cannot be used; the
	// wrapping message names the field and the rule.
	ErrInvalidOption = errors.New("circuit: invalid option")
	// ErrInvalid reports a stored circuit that does not validate (see
	// DecodeState); the wrapping message names the field.
	ErrInvalid = errors.New("circuit: invalid stored circuit")
	// ErrNotFound reports a function that has no circuit in the bucket (it
	// never opened and no operator set it).
	ErrNotFound = errors.New("circuit: not found")
	// ErrInvalidFunction reports a function name that is not
	// CONTEXT.PROCESSOR.NAME of valid names.
	ErrInvalidFunction = errors.New("circuit: invalid function")
)
