package jsstore

import "errors"

// ErrInvalidOption reports an option value New cannot use.
//
// The other errors of the store are eventstore's sentinels:
// eventstore.ErrInvalid, ErrNotFound, ErrConflict, eventstore.ErrCorrupt (a stored
// message that is not a stream amends wrote, naming its sequence) and
// ErrIncompatible (an existing JetStream stream whose settings differ from
// the store's, listing each difference; amends never reconfigures a stream).
var ErrInvalidOption = errors.New("jsstore: invalid option")
