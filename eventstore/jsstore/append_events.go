package jsstore

import (
	"context"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/eventstore"
)

// AppendEvents appends events to aggregate a as one command, at version
// expectedVersion+1 (0 for a new aggregate): it builds the stream with
// eventstore.NewStream, random UUIDs for the stream, the command and each
// event, and the store's clock (WithClock) for CreateTime, then Appends it.
// Use Append to set the ids, request id, trace id or headers yourself.
//
// It returns the committed stream (Seq set), an *eventstore.ConflictError
// matching eventstore.ErrConflict when the aggregate is at another version,
// or an error matching eventstore.ErrInvalid that names the event or field
// that breaks a rule. Safe for concurrent use.
func (s *Store) AppendEvents(ctx context.Context, a eventstore.AggregateID, expectedVersion uint64, events ...eventstore.NewEvent) (eventstore.Stream, error) {
	st, err := eventstore.NewStream(a, s.opts.now(), uuid.NewString, events...)
	if err != nil {
		return eventstore.Stream{}, err
	}
	return s.Append(ctx, st, expectedVersion)
}
