package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
)

// GetView reads the view of record id from the views bucket: one read of
// the last change of its keys (Views.Lookup). A record without a view (or
// whose view was deleted) is an error matching ErrNotFound; a stored value
// that is not a valid view (decodeView, checkView), ErrCorruptView; an id
// that cannot be a record id (CheckID), ErrInvalidQuery, and nothing is
// sent. Safe for concurrent use.
func GetView(ctx context.Context, views *Views, id string) (api.View, error) {
	e, err := views.Lookup(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || err == nil && e.Operation() != jetstream.KeyValuePut {
		return api.View{}, fmt.Errorf("record %s has no view: %w", id, ErrNotFound)
	}
	if errors.Is(err, ErrInvalidQuery) {
		return api.View{}, err
	}
	if err != nil {
		return api.View{}, fmt.Errorf("read the view of record %s: %w", id, err)
	}
	v, err := readView(e.Value())
	if err == nil {
		if cerr := checkView(e.Key(), &v); cerr != nil {
			err = errInvalidView(cerr)
		}
	}
	if err != nil {
		return api.View{}, fmt.Errorf("record %s: %w", id, err)
	}
	return v, nil
}

// Get returns the full record id and its version from the views bucket
// (the index keeps only what queries need). A stored view that does not
// validate is made again from the record's history (and projected again,
// WithReprojector), so the record can still be shown. Errors as GetView.
// Safe for concurrent use.
func (ix *Index) Get(ctx context.Context, id string) (api.View, error) {
	v, err := GetView(ctx, ix.views, id)
	if errors.Is(err, ErrCorruptView) {
		return ix.rebuildFromHistory(ctx, id, err)
	}
	return v, err
}

// Change is one command in a record's history.
type Change struct {
	// Stream is the stored stream: version, sequence, command id, actor
	// and reason headers, create time and the raw events.
	Stream eventstore.Stream
	// Events are the stream's events, decoded.
	Events []aggregate.Event
}

// History returns the commands applied to record id, newest first, read
// from the event store. A record that does not exist is an error matching
// ErrNotFound; an id that cannot be a record id (CheckID), ErrInvalidQuery,
// and nothing is sent. Safe for concurrent use.
func (ix *Index) History(ctx context.Context, id string) ([]Change, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	a := aggregate.RecordAggregate(id)
	streams, err := ix.history.Load(ctx, a, 1)
	// The index may have seen a version that the replica which answered
	// the read has not applied yet: read from the stream leader then, so
	// the history is never older than the record the index shows.
	if indexed := ix.Index.Version(id); indexed > 0 && (errors.Is(err, eventstore.ErrNotFound) || err == nil && uint64(len(streams)) < indexed) {
		if ls, ok := ix.history.(leaderHistory); ok {
			var last eventstore.Stream
			if last, err = ls.LoadLastFromLeader(ctx, a); err == nil {
				streams, err = ls.LoadAt(ctx, a, 1, last.Seq)
			}
		}
	}
	if errors.Is(err, eventstore.ErrNotFound) {
		return nil, fmt.Errorf("record %s has no history: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("load the history of record %s: %w", id, err)
	}
	out := make([]Change, len(streams))
	for i, st := range streams {
		c := Change{Stream: st}
		for j, e := range st.Events {
			ev, err := aggregate.DecodeEvent(e.Name, e.Body)
			if err != nil {
				return nil, fmt.Errorf("record %s version %d event %d: %w", id, st.Version, j, err)
			}
			c.Events = append(c.Events, ev)
		}
		out[i] = c
	}
	slices.Reverse(out)
	return out, nil
}

// leaderHistory is what a HistoryStore may offer to read a history from
// the stream leader when a replica lags: *jsstore.Store does.
type leaderHistory interface {
	LoadLastFromLeader(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error)
	LoadAt(ctx context.Context, a eventstore.AggregateID, from, seq uint64) ([]eventstore.Stream, error)
}
