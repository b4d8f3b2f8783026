package archive

import "errors"

var (
	// ErrInvalid reports an archive spec, a name or a stored object or
	// manifest that does not validate; the message names what and why.
	ErrInvalid = errors.New("archive: invalid")
	// ErrNotFound reports an object or manifest the archive does not hold.
	ErrNotFound = errors.New("archive: not found")
	// ErrTooLarge reports an object over MaxObjectBytes, or a line over
	// MaxLineBytes.
	ErrTooLarge = errors.New("archive: too large")
)
