package projection

import (
	"fmt"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
)

// action is what the projector does with a stream, given the stored view.
type action int

const (
	// skip: the view is at or past the stream's version (a redelivery, or
	// another projector was faster).
	skip action = iota
	// evolve: the stream is the next version; apply its events.
	evolve
	// rebuild: the view is missing or behind by more than one version;
	// take the state the stream carries, or replay the history.
	rebuild
)

// plan decides what to do with stream st given the stored view (nil if
// there is none).
func plan(stored *api.View, st *eventstore.Stream) action {
	switch {
	case stored != nil && st.Version <= stored.Version:
		return skip
	case stored == nil && st.Version == 1, stored != nil && stored.Version == st.Version-1:
		return evolve
	default:
		return rebuild
	}
}

// evolveView applies st's events to the stored view (nil: the record before
// its first stream) with the aggregate's own Evolve. An event that does not
// decode is an error matching aggregate.ErrIllegalArgument.
func evolveView(stored *api.View, st *eventstore.Stream) (api.View, error) {
	s := aggregate.State{ID: st.Aggregate.ID}
	if stored != nil {
		s = stored.State
	}
	for i, e := range st.Events {
		ev, err := aggregate.DecodeEvent(e.Name, e.Body)
		if err != nil {
			return api.View{}, fmt.Errorf("record %s version %d event %d: %w", st.Aggregate.ID, st.Version, i, err)
		}
		s = aggregate.EvolveAt(s, st.Version, ev)
	}
	return api.View{State: s, Version: st.Version, UpdatedAt: st.CreateTime, Seq: st.Seq}, nil
}

// replayView builds the view of the last of streams, a record's whole
// history in version order, with Evolve.
func replayView(id string, streams []eventstore.Stream) (api.View, error) {
	var v *api.View
	for i := range streams {
		next, err := evolveView(v, &streams[i])
		if err != nil {
			return api.View{}, err
		}
		v = &next
	}
	if v == nil {
		return api.View{}, fmt.Errorf("record %s has no history: %w", id, ErrNotFound)
	}
	return *v, nil
}
