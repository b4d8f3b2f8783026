package natsconn

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidConfig reports a setting of EmbeddedConfig or ClientConfig
	// that cannot be used. Errors matching it carry a message that names the
	// setting, its value and what is expected, without this sentinel's text.
	ErrInvalidConfig = errors.New("natsconn: invalid config")
	// ErrDataDirLocked reports that another process (or another Embedded in
	// this one) holds the lock of the data directory. Errors matching it name
	// the directory and, when known, the pid of the holder.
	ErrDataDirLocked = errors.New("natsconn: data directory locked")
)

// markedError is an error whose message is its own and that matches a
// sentinel with errors.Is, so the sentinel's package-prefixed text never
// reaches a user.
type markedError struct {
	msg  string
	mark error
	// cause is a wrapped error, matched by errors.Is and errors.As.
	cause error
}

func (e *markedError) Error() string { return e.msg }

func (e *markedError) Is(target error) bool { return target == e.mark }

func (e *markedError) Unwrap() error { return e.cause }

// invalidConfig returns an error matching ErrInvalidConfig with the message
// format and args make. A %w verb in format wraps its argument too.
func invalidConfig(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &markedError{msg: err.Error(), mark: ErrInvalidConfig, cause: err}
}
