package recorder

import (
	"errors"
	"fmt"

	crdb "github.com/cockroachdb/errors"
)

var (
	// ErrRecordingFailed matches the error Record returns with
	// RECORDING_FAILED. The error's message is the execution's; the last
	// send error is attached as a secondary error (shown by %+v, and by
	// SendError).
	ErrRecordingFailed = errors.New("recorder: recording failed")
	// ErrInvalidOption reports an option New cannot use.
	ErrInvalidOption = errors.New("recorder: invalid option")
)

// recordingFailed is the execution's error with the last send error
// attached.
type recordingFailed struct {
	err  error // the original error with the secondary attached
	send error
}

func (e *recordingFailed) Error() string        { return e.err.Error() }
func (e *recordingFailed) Unwrap() error        { return e.err }
func (e *recordingFailed) Is(target error) bool { return target == ErrRecordingFailed }

// SendError returns the last send error.
func (e *recordingFailed) SendError() error { return e.send }

// Format prints the wrapped error; %+v shows the attached send error and
// stacks (cockroachdb/errors formatting).
func (e *recordingFailed) Format(s fmt.State, verb rune) { crdb.FormatError(e.err, s, verb) }

// attach returns orig with the send error attached once: an error that
// already carries a recording failure (a shared error value returned again
// on redelivery goes through a new Record call, but one that was wrapped
// by an earlier Record keeps its first attachment) is returned unchanged.
func attach(orig, send error) error {
	if orig == nil {
		return &recordingFailed{err: send, send: send}
	}
	if errors.Is(orig, ErrRecordingFailed) {
		return orig
	}
	return &recordingFailed{err: crdb.WithSecondaryError(orig, send), send: send}
}

// SendError returns the last send error attached to an error Record
// returned, or nil.
func SendError(err error) error {
	var rf *recordingFailed
	if errors.As(err, &rf) {
		return rf.send
	}
	return nil
}
