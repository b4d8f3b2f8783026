package natsconn

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// Drain drains nc: its subscriptions stop taking new messages, handle the
// ones already delivered, pending publishes are flushed, and the
// connection closes. Drain waits until nc is closed or ctx is done; then it
// closes nc at once and returns an error wrapping ctx's cause. Draining a
// closed connection returns nil. nc's own drain timeout (30s by default)
// also ends the wait.
//
// Drain is safe to call concurrently with other users of nc; they see
// their subscriptions end and their publishes fail with
// nats.ErrConnectionDraining or nats.ErrConnectionClosed.
func Drain(ctx context.Context, nc *nats.Conn) error {
	closed := nc.StatusChanged(nats.CLOSED)
	defer nc.RemoveStatusListener(closed)
	if nc.IsClosed() {
		return nil
	}
	if err := nc.Drain(); err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) {
			return nil
		}
		return fmt.Errorf("drain NATS connection: %w", err)
	}
	select {
	case <-closed:
		return nil
	case <-ctx.Done():
		nc.Close()
		return fmt.Errorf("drain NATS connection: closed before it drained: %w", context.Cause(ctx))
	}
}
