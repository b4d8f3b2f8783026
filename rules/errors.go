package rules

import "errors"

// Sentinel errors of the package.
var (
	// ErrInvalidRule: a rule or a change to it is not valid; the message
	// names the field, the problem and the limit.
	ErrInvalidRule = errors.New("rules: invalid rule")
	// ErrNotFound: no rule has the id.
	ErrNotFound = errors.New("rules: rule not found")
	// ErrTooMany: the store holds MaxRules live rules already.
	ErrTooMany = errors.New("rules: too many rules")
	// ErrInvalidOption: an option cannot be applied.
	ErrInvalidOption = errors.New("rules: invalid option")
)

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
