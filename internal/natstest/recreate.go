package natstest

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// errStreamStoreCreate is the server's JSStreamCreateErrF: a stream's store
// could not be made, as happens while the store of a stream of the same
// name, just deleted, is still being removed.
const errStreamStoreCreate jetstream.ErrorCode = 10049

// Recreate runs create, which makes again a stream (or a bucket) the test
// has just deleted, until the server stops answering that the stream's
// store cannot be created yet: the server removes a deleted stream's files
// after it has answered the delete. Any other error fails the test at
// once; the store still not made after readyTimeout fails it too.
func Recreate[T any](tb testing.TB, create func() (T, error)) T {
	tb.Helper()
	deadline := time.Now().Add(readyTimeout)
	for {
		v, err := create()
		if err == nil {
			return v
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != errStreamStoreCreate || time.Now().After(deadline) {
			tb.Fatalf("natstest: creating again what was deleted: %v", err)
		}
		time.Sleep(5 * time.Millisecond) // polling the server, not waiting for a result
	}
}
