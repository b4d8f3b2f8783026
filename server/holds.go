package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
)

// Ordering serves the routes of Ordered functions' holds
// (/api/v1/holds) and of range replays (/api/v1/replays). Holds and
// Replays are the buckets (processor.OpenHolds, OpenReplays); Records
// marks a released hold's head resolved; JS and Store read the events a
// replay's dry run selects.
type Ordering struct {
	Holds   *processor.Holds
	Replays *processor.Replays
	Records processor.RecordCommands
	JS      jetstream.JetStream
	Store   *jsstore.Store
}

// holdParams are the query parameters of GET /api/v1/holds.
var holdParams = []string{"context", "function", "limit", "processor", "record"}

// defaultHoldLimit is the page size of GET /api/v1/holds without a limit.
const defaultHoldLimit = 100

// maxHoldKey bounds a hold key in a path: the names (3 × 64 + 64) and a
// base64 aggregate id of at most 256 bytes.
const maxHoldKey = 700

func (s *Server) ordering() (*Ordering, error) {
	if s.cfg.Ordering == nil || s.cfg.Ordering.Holds == nil {
		return nil, notConfigured("this server keeps no holds or range replays of Ordered functions")
	}
	return s.cfg.Ordering, nil
}

func (s *Server) listHolds(w http.ResponseWriter, r *http.Request, _ principal) error {
	q, err := queryValues(r)
	if err != nil {
		return err
	}
	if err := checkParams(q, holdParams); err != nil {
		return err
	}
	limit, err := limitParam(q, defaultHoldLimit, processor.MaxHoldList)
	if err != nil {
		return err
	}
	f := processor.HoldFilter{Context: q.Get("context"), Processor: q.Get("processor"), Function: q.Get("function"), Record: q.Get("record")}
	if (f.Processor != "" || f.Function != "") && f.Context == "" {
		return badRequest("context", "processor and function select holds within a context: give context too")
	}
	o, err := s.ordering()
	if err != nil {
		return err
	}
	holds, more, err := o.Holds.List(r.Context(), f, limit)
	if err != nil {
		return err
	}
	page := api.HoldPage{Holds: []api.HoldSummary{}, More: more}
	for i := range holds {
		page.Holds = append(page.Holds, holds[i].Summary())
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// holdKey reads and checks the path's hold key.
func holdKey(r *http.Request) (string, error) {
	key := r.PathValue("key")
	if ae := checkText("key", key, maxHoldKey); ae != nil {
		return "", ae
	}
	if key == "" || strings.ContainsFunc(key, func(c rune) bool {
		return !(c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
	}) {
		return "", badRequest("key", "a hold key is <context>.<processor>.<function>.<aggregateType>.<base64url id>, got %s; list holds with GET /api/v1/holds", quote(key))
	}
	return key, nil
}

func holdNotFound(key string) *apiError {
	return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound",
		Message: "no hold " + key + "; it was released, or never held; list holds with GET /api/v1/holds (amends holds list)",
		Details: map[string]any{"key": key}}}
}

func (s *Server) getHold(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	key, err := holdKey(r)
	if err != nil {
		return err
	}
	o, err := s.ordering()
	if err != nil {
		return err
	}
	h, err := o.Holds.Get(r.Context(), key)
	if errors.Is(err, processor.ErrHoldNotFound) {
		return holdNotFound(key)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}

// holdAction reads the body of a release or skip.
func (s *Server) holdAction(w http.ResponseWriter, r *http.Request, p principal, what string) (string, api.HoldActionRequest, processor.HoldAction, error) {
	var req api.HoldActionRequest
	if err := noQuery(r); err != nil {
		return "", req, processor.HoldAction{}, err
	}
	key, err := holdKey(r)
	if err != nil {
		return "", req, processor.HoldAction{}, err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return "", req, processor.HoldAction{}, err
	}
	if err := decodeStrict(body, &req, "the body of "+what); err != nil {
		return "", req, processor.HoldAction{}, err
	}
	reason, err := checkReason(what, true, &req.Reason) // required, as for a forced prepare
	if err != nil {
		return "", req, processor.HoldAction{}, err
	}
	return key, req, processor.HoldAction{Actor: p.name, Reason: reason, DryRun: req.DryRun, Now: s.cfg.Clock.Now()}, nil
}

func (s *Server) releaseHold(w http.ResponseWriter, r *http.Request, p principal) error {
	key, req, act, err := s.holdAction(w, r, p, "a release")
	if err != nil {
		return err
	}
	if req.EventID != "" {
		return badRequest("eventId", "a release takes no eventId: it releases every held event in order; skip one with POST /api/v1/holds/{key}/skip")
	}
	o, err := s.ordering()
	if err != nil {
		return err
	}
	if o.Records == nil {
		return notConfigured("this server cannot release holds: it has no record service")
	}
	plan, err := o.Holds.Release(r.Context(), key, o.Records, act)
	switch {
	case errors.Is(err, processor.ErrHoldNotFound):
		return holdNotFound(key)
	case err != nil:
		if ae := commandError(plan.Hold.Head.Record, err); ae != nil {
			return ae
		}
		return err
	}
	writeJSON(w, http.StatusOK, plan)
	return nil
}

func (s *Server) skipHeld(w http.ResponseWriter, r *http.Request, p principal) error {
	key, req, act, err := s.holdAction(w, r, p, "a skip")
	if err != nil {
		return err
	}
	if strings.TrimSpace(req.EventID) == "" {
		return badRequest("eventId", "a skip names the held event: add \"eventId\": \"...\" to the body (see GET /api/v1/holds/{key})")
	}
	if ae := checkText("eventId", req.EventID, 256); ae != nil {
		return ae
	}
	o, err := s.ordering()
	if err != nil {
		return err
	}
	h, err := o.Holds.Skip(r.Context(), key, req.EventID, act)
	switch {
	case errors.Is(err, processor.ErrHoldNotFound):
		return holdNotFound(key)
	case errors.Is(err, processor.ErrNotHeld):
		return &apiError{status: http.StatusConflict, body: api.Error{Code: "NotHeld",
			Message: "event " + req.EventID + " is not held by hold " + key + "; the held events are listed by GET /api/v1/holds/{key}",
			Details: map[string]any{"field": "eventId"}}}
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, h)
	return nil
}
