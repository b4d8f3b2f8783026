package kvstore

import "errors"

// Sentinels matched with errors.Is. The errors that wrap them name the
// bucket and key.
var (
	// ErrNotFound: the key has no value (never written, deleted or
	// purged).
	ErrNotFound = errors.New("kvstore: key not found")
	// ErrConflict: a compare-and-set found the key at another revision
	// (or, for Create, present).
	ErrConflict = errors.New("kvstore: revision conflict")
	// ErrInvalid: a stored value (or its key) is not a valid entry of its
	// bucket; the *InvalidError says where and why.
	ErrInvalid = errors.New("kvstore: invalid entry")
	// ErrTooLarge: a value to write is larger than the bucket takes.
	ErrTooLarge = errors.New("kvstore: value too large")
	// ErrInvalidKey: a key to read or write is not a valid KV key.
	ErrInvalidKey = errors.New("kvstore: invalid key")
	// ErrMismatch: the bucket exists with settings other than its Spec's;
	// the *MismatchError lists them.
	ErrMismatch = errors.New("kvstore: bucket settings mismatch")
)
