package server

import (
	"net/http"
	"slices"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection"
)

// attemptRoutes serves a record's attempt timeline; routeTable lists them.
func (s *Server) attemptRoutes() []route {
	return []route{
		{method: "GET", pattern: "/api/v1/records/{id}/attempts", role: RoleViewer, handler: s.attempts},
	}
}

// attempts answers the record's attempts, oldest first, derived from its
// history (the event store, never older than the index).
func (s *Server) attempts(w http.ResponseWriter, r *http.Request, _ principal) error {
	id, changes, err := s.pathHistory(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, AttemptsOf(id, changes))
	return nil
}

// AttemptsOf derives the attempts of record id from its history, newest
// first as Queries.History returns it.
func AttemptsOf(id string, changes []projection.Change) api.Attempts {
	steps := make([]aggregate.Step, 0, len(changes))
	var s aggregate.State
	for _, c := range slices.Backward(changes) {
		steps = append(steps, aggregate.Step{Version: c.Stream.Version, CreateTime: c.Stream.CreateTime, Events: c.Events})
		s = aggregate.EvolveAll(s, c.Events...)
	}
	out := api.Attempts{ID: id, Timeline: aggregate.Timeline(steps), FinalFailure: aggregate.FinalFailure(&s)}
	if out.Timeline == nil {
		out.Timeline = []aggregate.TimelineEntry{}
	}
	return out
}
