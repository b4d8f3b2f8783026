package eventstore

import (
	"context"
	"errors"
	"fmt"
)

// Locator reads single streams, by sequence and by version: the part of a
// Reader that Locate needs.
type Locator interface {
	// GetSeq returns the stream stored at sequence seq of context's log.
	GetSeq(ctx context.Context, context string, seq uint64) (Stream, error)
	// LoadVersion returns the aggregate's stream at version v.
	LoadVersion(ctx context.Context, a AggregateID, v uint64) (Stream, error)
}

// Locate returns the stream holding event id of aggregate a at version,
// and the event's index in its Events, as a record names the event: by
// its sequence seq first (one direct get) when seq is not 0 and holds that
// event, else by aggregate and version. A sequence that holds something
// else, nothing, or a stream that cannot be decoded falls back to the
// version; any other error of the sequence's read is returned as it is
// (the store cannot be read now). The version's errors are returned as
// they are (ErrNotFound, ErrInvalid, ErrCorrupt among them); a stream at
// that version without the event matches ErrNotFound. Safe for concurrent
// use if r is.
func Locate(ctx context.Context, r Locator, a AggregateID, id string, version, seq uint64) (Stream, int, error) {
	if seq > 0 {
		st, err := r.GetSeq(ctx, a.Context, seq)
		if err == nil && st.Aggregate == a && st.Version == version {
			if i := st.eventIndex(id); i >= 0 {
				return st, i, nil
			}
		}
		if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrInvalid) {
			return Stream{}, 0, err
		}
	}
	st, err := r.LoadVersion(ctx, a, version)
	if err != nil {
		return Stream{}, 0, err
	}
	i := st.eventIndex(id)
	if i < 0 {
		return Stream{}, 0, fmt.Errorf("%s version %d has no event %s: %w", a, version, id, ErrNotFound)
	}
	return st, i, nil
}

// eventIndex is the index of event id in s.Events, -1 if it has none.
func (s *Stream) eventIndex(id string) int {
	for i := range s.Events {
		if s.Events[i].ID == id {
			return i
		}
	}
	return -1
}
