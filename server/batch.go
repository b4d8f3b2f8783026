package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"golang.org/x/time/rate"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/projection"
)

// BatchCommands are the commands a batch can run.
var BatchCommands = commandNames(api.BatchCommands)

var batchNamespace = uuid.MustParse("9d3f3b0e-3c1a-4f57-8d43-2d8a1b6e0c55")

func (s *Server) batch(w http.ResponseWriter, r *http.Request, p principal) error {
	name := r.PathValue("command")
	if !slices.Contains(BatchCommands, name) {
		return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound",
			Message: "batches run " + strings.Join(BatchCommands, " or ") + ", not " + quote(name), Details: map[string]any{"field": "command"}}}
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	req, err := s.parseBatch(name, body)
	if err != nil {
		return err
	}
	cmd, _ := aggregate.DecodeCommand(name, nil)
	ids, matched, err := s.batchIDs(req)
	if err != nil {
		return err
	}
	res := &api.BatchResult{Command: name, RequestID: req.RequestID, DryRun: req.DryRun, Matched: matched, Counts: map[string]int{}, Records: []api.BatchOutcome{}}
	stream := strings.Contains(r.Header.Get("Accept"), "application/x-ndjson")
	if req.DryRun {
		emit := s.emitter(w, res, stream, len(ids))
		for _, id := range ids {
			emit(s.dryRun(r.Context(), id, cmd))
		}
		res.Complete = true
		return s.finish(w, res, stream)
	}

	res.BodyHash = bodyHash(name, body)
	prior, release, err := s.claimBatch(r.Context(), req.RequestID, res.BodyHash)
	if err != nil {
		return err
	}
	if prior != nil {
		prior.Replayed = true
		if stream {
			w.Header().Set("Content-Type", "application/x-ndjson")
		}
		return s.finish(w, prior, stream)
	}
	defer func() { release(res) }()
	emit := s.emitter(w, res, stream, len(ids))
	limiter := rate.NewLimiter(rate.Limit(req.RatePerSecond), 1)
	for _, id := range ids {
		if err := limiter.Wait(r.Context()); err != nil {
			break // the client went away; the stored result says so
		}
		emit(s.runOne(r.Context(), id, cmd, p, req))
	}
	res.Complete = r.Context().Err() == nil
	return s.finish(w, res, stream)
}

// batchBody is api.BatchRequest as the server reads it: strictly, with the
// filter's values as the list's query parameters take them.
type batchBody struct {
	Filter        map[string]json.RawMessage `json:"filter"`
	Limit         *int                       `json:"limit"`
	DryRun        bool                       `json:"dryRun"`
	RatePerSecond float64                    `json:"ratePerSecond"`
	RequestID     string                     `json:"requestId"`
	Reason        string                     `json:"reason"`
}

func (s *Server) parseBatch(name string, body []byte) (api.BatchRequest, error) {
	var b batchBody
	if err := decodeStrict(body, &b, "the body of batch "+name); err != nil {
		return api.BatchRequest{}, err
	}
	f, err := batchFilter(b.Filter)
	if err != nil {
		return api.BatchRequest{}, err
	}
	limit := s.cfg.MaxBatch // absent: the most a batch takes
	if b.Limit != nil {
		limit = *b.Limit
	}
	req := api.BatchRequest{Filter: f, Limit: limit, DryRun: b.DryRun, RatePerSecond: b.RatePerSecond, RequestID: b.RequestID, Reason: strings.TrimSpace(b.Reason)}
	switch {
	case !bounds.Within(req.Limit, 1, s.cfg.MaxBatch):
		return req, badRequest("limit", "limit must be between 1 and %d (absent: %d), got %d", s.cfg.MaxBatch, s.cfg.MaxBatch, req.Limit)
	case !bounds.Within(req.RatePerSecond, 0, api.MaxBatchRate):
		return req, badRequest("ratePerSecond", "ratePerSecond must be between 0 (the default %g) and %g, got %g", api.DefaultBatchRate, api.MaxBatchRate, req.RatePerSecond)
	case !req.DryRun && strings.TrimSpace(req.RequestID) == "":
		return req, badRequest("requestId", "a real batch needs a requestId, so that sending it again does not run it twice")
	}
	if ae := checkText("requestId", req.RequestID, MaxParamBytes); ae != nil {
		return req, ae
	}
	if req.Reason != "" || !req.DryRun { // a dry run needs no reason
		if _, err := checkCommandReason(name, &req.Reason); err != nil {
			return req, err
		}
	}
	if req.RatePerSecond == 0 {
		req.RatePerSecond = api.DefaultBatchRate
	}
	return req, nil
}

// batchFilter reads a batch's filter: the list's filter parameters, each a
// JSON string (or a number for minRetries and the times), with the list's
// rules. Errors name the field as "filter.<name>".
func batchFilter(raw map[string]json.RawMessage) (api.Filter, error) {
	q := url.Values{}
	var now time.Time
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v := raw[k]
		if k != "now" && !slices.Contains(filterParams, k) {
			return api.Filter{}, badRequest(filterField(k), "unknown field %s in the filter; the filters are %s, now", quote("filter."+k), strings.Join(filterParams, ", "))
		}
		if string(v) == "null" {
			continue
		}
		str, err := filterValue(k, v)
		if err != nil {
			return api.Filter{}, err
		}
		if k == "now" {
			// The time views are evaluated at (projection.Filter.Now).
			t, err := parseTime(url.Values{"now": {str}}, "now")
			if err != nil {
				return api.Filter{}, prefixField("filter.", err)
			}
			now = t
			continue
		}
		q.Set(k, str)
	}
	f, err := parseFilter(q)
	if err != nil {
		return f, prefixField("filter.", err)
	}
	f.Now = now
	return f, nil
}

// filterField is details.field of filter field k.
func filterField(k string) string {
	if k == "" {
		return "filter"
	}
	return "filter." + fieldName(k, "")
}

// prefixField puts prefix before the field an *apiError names.
func prefixField(prefix string, err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		if f, ok := ae.body.Details["field"].(string); ok {
			ae.body.Details["field"] = prefix + f
		}
	}
	return err
}

// batchIDs lists the ids of up to req.Limit matching records, oldest
// failure first, and counts all matching ones.
func (s *Server) batchIDs(req api.BatchRequest) ([]string, int, error) {
	matched, err := s.cfg.Queries.Count(req.Filter)
	if err != nil {
		if ae := queryError("", err); ae != nil {
			return nil, 0, ae
		}
		return nil, 0, err
	}
	var ids []string
	q := api.Query{Filter: req.Filter, Limit: min(api.MaxLimit, req.Limit)}
	for len(ids) < req.Limit {
		page, err := s.cfg.Queries.List(q)
		if err != nil {
			if ae := queryError("", err); ae != nil {
				return nil, 0, ae
			}
			return nil, 0, err
		}
		for _, it := range page.Items {
			if len(ids) < req.Limit {
				ids = append(ids, it.ID)
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	return ids, matched, nil
}

func (s *Server) dryRun(ctx context.Context, id string, cmd aggregate.Command) api.BatchOutcome {
	v, err := s.cfg.Queries.Get(ctx, id)
	if err != nil {
		return s.failed(id, cmd, err)
	}
	if o, refused := s.batchCircuit(ctx, id, cmd, api.OutcomeWouldNot); refused {
		o.Version = v.Version
		return o
	}
	if _, err := aggregate.Decide(v.State, cmd, s.cfg.Clock.Now()); err != nil {
		var ae *aggregate.Error
		if errors.As(err, &ae) {
			return api.BatchOutcome{ID: id, Outcome: api.OutcomeWouldNot, Code: ae.Code(), Message: ae.Message, Version: v.Version}
		}
		return s.failed(id, cmd, err)
	}
	return api.BatchOutcome{ID: id, Outcome: api.OutcomeWould, Version: v.Version}
}

func (s *Server) runOne(ctx context.Context, id string, cmd aggregate.Command, p principal, req api.BatchRequest) api.BatchOutcome {
	if o, refused := s.batchCircuit(ctx, id, cmd, api.OutcomeRejected); refused {
		return o
	}
	meta := aggregate.Meta{
		CommandID: uuid.NewSHA1(batchNamespace, []byte(req.RequestID+"\x00"+cmd.CommandName()+"\x00"+id)).String(),
		RequestID: req.RequestID, Actor: p.name, Reason: req.Reason,
	}
	res, err := s.cfg.Commands.Execute(ctx, id, cmd, meta)
	if o, ok := api.OutcomeOf(id, res, err); ok {
		return o
	}
	return s.failed(id, cmd, err)
}

// batchCircuit is the outcome of a batch's prepare of record id while its
// function's circuit is not closed (see guardPrepare; a batch never
// probes), and whether there is one.
func (s *Server) batchCircuit(ctx context.Context, id string, cmd aggregate.Command, outcome string) (api.BatchOutcome, bool) {
	switch cmd.(type) {
	case aggregate.PrepareCompensation, aggregate.ForcePrepareCompensation:
	default:
		return api.BatchOutcome{}, false
	}
	err := s.guardPrepare(ctx, id, false, "")
	var ae *apiError
	switch {
	case err == nil:
		return api.BatchOutcome{}, false
	case errors.As(err, &ae):
		return api.BatchOutcome{ID: id, Outcome: outcome, Code: ae.body.Code, Message: ae.body.Message}, true
	}
	return s.failed(id, cmd, err), true
}

// failed is the outcome of a record whose command failed for a reason
// other than a refusal. Its message says what to do, without the error's
// internals, which go to the log.
func (s *Server) failed(id string, cmd aggregate.Command, err error) api.BatchOutcome {
	switch {
	case errors.Is(err, projection.ErrNotFound):
		return api.BatchOutcome{ID: id, Outcome: api.OutcomeFailed, Code: "NotFound", Message: "the record has no view any more"}
	case errors.Is(err, eventstore.ErrConflict):
		return api.BatchOutcome{ID: id, Outcome: api.OutcomeFailed, Code: "Conflict", Message: "the record changed while the command ran; run the batch again with the same requestId"}
	}
	s.log.Warn("batch command failed", "id", id, "command", cmd.CommandName(), "err", err)
	code, msg := "Internal", "internal error; the server log has the details"
	if unavailable(err) {
		code, msg = "Unavailable", "the server could not reach NATS; run the batch again with the same requestId"
	}
	return api.BatchOutcome{ID: id, Outcome: api.OutcomeFailed, Code: code, Message: msg}
}

// emitter records an outcome in res and, when streaming, writes it.
func (s *Server) emitter(w http.ResponseWriter, res *api.BatchResult, stream bool, total int) func(api.BatchOutcome) {
	enc := json.NewEncoder(w)
	if stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		_ = enc.Encode(api.BatchLine{Start: &api.BatchStart{Matched: res.Matched, Total: total}})
	}
	return func(o api.BatchOutcome) {
		res.Records = append(res.Records, o)
		res.Counts[o.Outcome]++
		if stream {
			_ = enc.Encode(api.BatchLine{Outcome: &o})
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
	}
}

func (s *Server) finish(w http.ResponseWriter, res *api.BatchResult, stream bool) error {
	if stream {
		return json.NewEncoder(w).Encode(api.BatchLine{Result: res})
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func bodyHash(command string, body []byte) string {
	var compact strings.Builder
	var v any
	if json.Unmarshal(body, &v) == nil {
		b, _ := json.Marshal(v) // key order normalised
		compact.Write(b)
	}
	sum := sha256.Sum256([]byte(command + "\x00" + compact.String()))
	return hex.EncodeToString(sum[:16])
}

// numericFilters are the filter fields that may also be given as JSON
// numbers.
var numericFilters = []string{"minRetries", "executeAtFrom", "executeAtTo", "nextRetryAtFrom", "nextRetryAtTo", "now"}

// filterValue is filter field k's value v as the query parameter's text:
// a JSON string, or a number for the numeric fields.
func filterValue(k string, v json.RawMessage) (string, error) {
	var str string
	if err := json.Unmarshal(v, &str); err == nil {
		return str, nil
	}
	var n json.Number
	if !slices.Contains(numericFilters, k) || json.Unmarshal(v, &n) != nil {
		return "", badRequest(filterField(k), "field %s: must be a string", quote("filter."+k))
	}
	return n.String(), nil
}
