package client

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrTimeout matches (errors.Is) the error of a call that got no answer
	// within the client's timeout, or a batch stream that sent no line
	// within the idle timeout.
	ErrTimeout = errors.New("client: no answer in time")
	// ErrInvalidOption matches the error of New for an option it refuses.
	ErrInvalidOption = errors.New("client: invalid option")
	// ErrInvalidRequest matches the error of a call the client refuses to
	// send, such as a filter with a Now outside a batch.
	ErrInvalidRequest = errors.New("client: invalid request")
)

// requestError is the error of a request the client refuses. Its text
// says what to change, not the sentinel it matches.
type requestError struct{ msg string }

func invalidRequest(msg string) error { return &requestError{msg} }

func (e *requestError) Error() string { return e.msg }

func (e *requestError) Is(target error) bool { return target == ErrInvalidRequest }

// timeoutError is the error of a call that timed out. Its text names the
// request and the limit, not the sentinel it matches.
type timeoutError struct {
	method, url string
	after       time.Duration
	// lines > 0 or stream: the idle timeout of a streamed response.
	stream bool
	lines  int
}

func (e *timeoutError) Error() string {
	if e.stream && e.lines > 0 {
		return fmt.Sprintf("%s %s: no line of the stream within %s (after %d lines)", e.method, e.url, e.after, e.lines)
	}
	return fmt.Sprintf("%s %s: no answer within %s", e.method, e.url, e.after)
}

func (e *timeoutError) Is(target error) bool { return target == ErrTimeout }
