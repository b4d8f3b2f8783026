package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
)

// planLimit bounds the events a dry run of a range replay lists.
const planLimit = 100

func (s *Server) startReplay(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	req, err := readJSON[api.ReplayStart](s, w, r, "the body of a range replay")
	if err != nil {
		return err
	}
	reason, err := checkReason("a range replay", true, &req.Reason)
	if err != nil {
		return err
	}
	req.Reason = reason
	o, err := s.ordering()
	if err != nil {
		return err
	}
	rr := req.Replay(p.name, s.cfg.Clock.Now().UnixMilli())
	if req.DryRun {
		if o.JS == nil || o.Store == nil {
			return notConfigured("this server cannot read events for a dry run")
		}
		plan, err := processor.Plan(r.Context(), o.JS, o.Store, rr, planLimit)
		if errors.Is(err, processor.ErrInvalidOption) {
			return replayInvalid(err)
		}
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, api.ReplayStarted{Plan: &plan})
		return nil
	}
	stored, created, err := o.Replays.Submit(r.Context(), rr)
	switch {
	case errors.Is(err, processor.ErrInvalidOption):
		return replayInvalid(err)
	case errors.Is(err, processor.ErrReplayConflict):
		return &apiError{status: http.StatusConflict, body: api.Error{Code: "Conflict", Message: trimSentinel(err, processor.ErrReplayConflict),
			Details: map[string]any{"field": "id"}}}
	case err != nil:
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, api.ReplayStarted{Replay: &stored, Created: created})
	return nil
}

func replayInvalid(err error) error {
	return badRequest("body", "%s", trimSentinel(err, processor.ErrInvalidOption))
}

func trimSentinel(err, sentinel error) string {
	return strings.TrimSuffix(err.Error(), ": "+sentinel.Error())
}

func (s *Server) getReplay(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := eventstore.ValidateName("replay id", id); err != nil {
		return badRequest("id", "%s", trimSentinel(err, eventstore.ErrInvalid))
	}
	o, err := s.ordering()
	if err != nil {
		return err
	}
	rr, err := o.Replays.Get(r.Context(), id)
	if errors.Is(err, processor.ErrReplayNotFound) {
		return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound", Message: "no range replay " + id + "; start one with POST /api/v1/replays (amends replay)",
			Details: map[string]any{"id": id}}}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rr)
	return nil
}
