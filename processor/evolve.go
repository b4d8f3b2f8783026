package processor

import (
	"fmt"
	"slices"

	"github.com/amends-dev/amends/eventstore"
)

// Evolver builds an aggregate's state from its events, for STATE_EVENT
// functions and snapshots. Build one with Evolve.
type Evolver struct {
	initial func(id eventstore.AggregateID) any
	evolve  func(state any, s *eventstore.Stream, e *eventstore.Event) (any, error)
	events  []string // nil: not known
}

// Evolve returns the Evolver of an aggregate type whose state is an S:
// initial gives the state before the first event, evolve the state after
// one event. evolve must not change the state it is given (return a new
// value, or a copy), since the processor keeps recent states; it returns an
// error only for an event it cannot read.
//
// events, when given, are all the event names of the aggregate type:
// RegisterAggregate then refuses a function that names another one (a
// typo such as "invoice_payed" would otherwise never fire).
func Evolve[S any](initial func(id eventstore.AggregateID) S, evolve func(state S, e *eventstore.Event) (S, error), events ...string) Evolver {
	return Evolver{
		events:  slices.Clone(events),
		initial: func(id eventstore.AggregateID) any { return initial(id) },
		evolve: func(state any, _ *eventstore.Stream, e *eventstore.Event) (any, error) {
			s, ok := state.(S)
			if !ok {
				return nil, fmt.Errorf("state is %T, not %T", state, s)
			}
			return evolve(s, e)
		},
	}
}

// apply folds the events of st into state.
func (ev Evolver) apply(state any, st *eventstore.Stream) (any, error) {
	for i := range st.Events {
		var err error
		if state, err = ev.evolve(state, st, &st.Events[i]); err != nil {
			return nil, fmt.Errorf("evolve %s version %d event %s (%s): %w", st.Aggregate, st.Version, st.Events[i].ID, st.Events[i].Name, err)
		}
	}
	return state, nil
}
