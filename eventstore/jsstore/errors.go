package jsstore

import "errors"

var (
	// ErrInvalidOption reports an option value New cannot use.
	ErrInvalidOption = errors.New("jsstore: invalid option")
	// ErrIncompatibleStream reports an existing JetStream stream whose
	// settings differ from the store's. amends never reconfigures a stream;
	// the wrapping message lists each difference.
	ErrIncompatibleStream = errors.New("jsstore: incompatible stream")
	// ErrCorrupt reports a stored message that is not a stream amends wrote.
	// The wrapping message names the stream sequence.
	ErrCorrupt = errors.New("jsstore: corrupt message")
)
