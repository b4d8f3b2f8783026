package quarantine

import "errors"

// Sentinels matched with errors.Is. Errors that wrap them name the value
// and the rule that was broken.
var (
	// ErrInvalidOption: an option value New cannot use.
	ErrInvalidOption = errors.New("quarantine: invalid option")
	// ErrInvalidQuery: a cursor, limit or consumer List cannot use.
	ErrInvalidQuery = errors.New("quarantine: invalid query")
	// ErrIncompatibleStream: the quarantine stream exists with subjects or
	// a retention other than the ones asked for. amends never reconfigures
	// it.
	ErrIncompatibleStream = errors.New("quarantine: incompatible stream")
)
