package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
)

// Circuits serves the functions' circuits (/api/v1/circuits) and the
// recovery drains (/api/v1/drains).
type Circuits struct {
	// Watcher keeps the circuits current (run it beside the server).
	Watcher *circuit.Watcher
	// Store reads one circuit fresh, and opens and closes them.
	Store *circuit.Store
	// Drains keeps the drains' progress; nil answers /api/v1/drains 404.
	Drains *circuit.Drains
}

// circuitRoutes are the routes of circuits and drains; routeTable lists
// them.
func (s *Server) circuitRoutes() []route {
	return []route{
		{method: "GET", pattern: "/api/v1/circuits", role: RoleViewer, handler: s.listCircuits},
		{method: "GET", pattern: "/api/v1/circuits/{function}", role: RoleViewer, handler: s.getCircuit},
		{method: "POST", pattern: "/api/v1/circuits/{function}/open", role: RoleOperator, handler: s.setCircuit(circuit.Open)},
		{method: "POST", pattern: "/api/v1/circuits/{function}/close", role: RoleOperator, handler: s.setCircuit(circuit.Closed)},
		{method: "GET", pattern: "/api/v1/drains", role: RoleViewer, handler: s.listDrains},
	}
}

func (s *Server) circuits() (*Circuits, error) {
	if c := s.cfg.Circuits; c == nil || c.Watcher == nil || c.Store == nil {
		return nil, notConfigured("this server keeps no circuits")
	}
	return s.cfg.Circuits, nil
}

// CircuitView is st as the API shows it.
func CircuitView(st circuit.State, stored bool) api.Circuit {
	f := st.Function
	v := api.Circuit{
		Function: f.String(), Context: f.Context, Processor: f.Processor, Name: f.Name, Phase: string(st.Phase), Stored: stored,
		Since: st.Since, Until: st.Until, CoolDownMs: st.CoolDownMs, Forced: st.Forced, Successes: st.Successes, ProbeFailures: st.ProbeFailures,
		Refused: st.Refused, RefusedTotal: st.RefusedTotal, IncidentFrom: st.Incident.From, IncidentTo: st.Incident.To, IncidentOpens: st.Incident.Opens,
		Opened: st.Counts.Opened, HalfOpened: st.Counts.HalfOpened, Closed: st.Counts.Closed,
		Transitions: make([]api.CircuitTransition, 0, len(st.Transitions)), UpdatedAt: st.UpdatedAt,
	}
	if p := st.Probe; p != nil {
		v.Probe = &api.CircuitProbe{Instance: p.Instance, At: p.At, Until: p.Until, Record: p.Record}
	}
	if l := st.Last; l != nil {
		v.Last = &api.CircuitFailure{Code: l.Code, Message: l.Message, Fingerprint: l.Fingerprint, Recoverable: string(l.Recoverable), At: l.At}
	}
	for _, t := range st.Transitions {
		v.Transitions = append(v.Transitions, api.CircuitTransition{Seq: t.Seq, At: t.At, From: string(t.From), To: string(t.To), Cause: string(t.Cause),
			Failures: t.Failures, Calls: t.Calls, CoolDownMs: t.CoolDownMs, Instance: t.Instance, Actor: t.Actor, Reason: t.Reason})
	}
	return v
}

func (s *Server) listCircuits(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	c, err := s.circuits()
	if err != nil {
		return err
	}
	out := api.CircuitList{Circuits: []api.Circuit{}, Invalid: []api.InvalidRecord{}}
	for _, st := range c.Watcher.List() {
		out.Circuits = append(out.Circuits, CircuitView(st, true))
	}
	for k, why := range c.Watcher.Invalid() {
		out.Invalid = append(out.Invalid, api.InvalidRecord{Key: k, Reason: why})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// circuitFunction reads and checks the path's function.
func circuitFunction(r *http.Request) (circuit.Function, error) {
	v := r.PathValue("function")
	if ae := checkText("function", v, 200); ae != nil {
		return circuit.Function{}, ae
	}
	f, err := circuit.ParseFunction(v)
	if err != nil {
		return circuit.Function{}, badRequest("function", "%s; list the circuits with GET /api/v1/circuits",
			strings.TrimSuffix(err.Error(), ": "+circuit.ErrInvalidFunction.Error()))
	}
	return f, nil
}

// readCircuit reads f's circuit fresh from the bucket: a function with
// none is closed and not stored; one that does not validate is a 409.
func readCircuit(r *http.Request, c *Circuits, f circuit.Function) (circuit.State, bool, error) {
	st, _, err := c.Store.Get(r.Context(), f)
	switch {
	case errors.Is(err, circuit.ErrNotFound):
		return circuit.New(f), false, nil
	case errors.Is(err, circuit.ErrInvalid):
		return circuit.State{}, false, &apiError{status: http.StatusConflict, body: api.Error{Code: "InvalidCircuit",
			Message: strings.TrimSuffix(err.Error(), ": "+circuit.ErrInvalid.Error()) + "; it is ignored (the function is called as if its circuit were closed); opening or closing it writes it anew",
			Details: map[string]any{"function": f.String()}}}
	case err != nil:
		return circuit.State{}, false, err
	}
	return st, true, nil
}

func (s *Server) getCircuit(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	f, err := circuitFunction(r)
	if err != nil {
		return err
	}
	c, err := s.circuits()
	if err != nil {
		return err
	}
	st, stored, err := readCircuit(r, c, f)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, CircuitView(st, stored))
	return nil
}

// setCircuit is the handler of an operator's open or close: audited (the
// actor and reason are kept in the circuit's transitions and logged),
// with a dry run.
func (s *Server) setCircuit(to circuit.Phase) func(http.ResponseWriter, *http.Request, principal) error {
	verb := "open"
	if to == circuit.Closed {
		verb = "close"
	}
	return func(w http.ResponseWriter, r *http.Request, p principal) error {
		if err := noQuery(r); err != nil {
			return err
		}
		f, err := circuitFunction(r)
		if err != nil {
			return err
		}
		body, err := s.readBody(w, r)
		if err != nil {
			return err
		}
		req, reason, err := circuitAction(body, verb)
		if err != nil {
			return err
		}
		c, err := s.circuits()
		if err != nil {
			return err
		}
		actor := p.name
		if len(actor) > circuit.MaxActorBytes {
			actor = actor[:circuit.MaxActorBytes]
		}
		now := s.cfg.Clock.Now()
		change := func(cur circuit.State) (circuit.State, bool) {
			return circuit.Evolve(cur, now, circuit.DefaultPolicy, circuit.OperatorSet{To: to, Actor: actor, Reason: reason})
		}
		if req.DryRun {
			return dryRunCircuit(w, r, c, f, change)
		}
		st, _, changed, err := c.Store.Update(r.Context(), f, change)
		if err != nil {
			return err
		}
		if changed {
			done := "closed"
			if st.Phase == circuit.Open {
				done = "opened"
			}
			s.log.Info("circuit "+done+" by an operator", "function", f.String(), "actor", actor, "reason", reason, "state", string(st.Phase))
		}
		writeJSON(w, http.StatusOK, api.CircuitChange{Circuit: CircuitView(st, true), Changed: changed})
		return nil
	}
}

func isInvalidCircuit(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.body.Code == "InvalidCircuit"
}

func (s *Server) listDrains(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	if s.cfg.Circuits == nil || s.cfg.Circuits.Drains == nil {
		return notConfigured("this server keeps no recovery drains")
	}
	list, bad, err := s.cfg.Circuits.Drains.List(r.Context())
	if err != nil {
		return err
	}
	out := api.DrainList{Drains: make([]api.Drain, 0, len(list)), Invalid: []api.InvalidRecord{}}
	for _, d := range list {
		out.Drains = append(out.Drains, DrainView(d))
	}
	for _, e := range bad {
		out.Invalid = append(out.Invalid, api.InvalidRecord{Key: "", Reason: strings.TrimSuffix(e.Error(), ": "+circuit.ErrInvalidDrain.Error())})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// DrainView is d as the API shows it.
func DrainView(d circuit.Drain) api.Drain {
	return api.Drain{Function: d.Function.String(), Phase: d.Phase, From: d.From, To: d.To, StartedAt: d.StartedAt, Size: d.Size, Rate: d.Rate,
		Steps: d.Judged, InFlight: len(d.Batch), Probes: d.Probes, Released: d.Released, Succeeded: d.Succeeded, Failed: d.Failed,
		Note: d.Note, DoneAt: d.DoneAt, UpdatedAt: d.UpdatedAt}
}

// guardPrepare lets the prepare of record id through while its function's
// circuit is closed (or the server keeps no circuits, or does not know the
// record: the command answers that). While it is not closed the replay
// would be refused and cost the record a retry: the prepare is refused
// with 409 CircuitOpen naming the circuit and the way round, unless probe
// asks for the replay to be the circuit's probe; then the probe is
// claimed for that record (actor's, before the cool-down if need be).
func (s *Server) guardPrepare(ctx context.Context, id string, probe bool, actor string) error {
	c := s.cfg.Circuits
	if c == nil || c.Watcher == nil || c.Store == nil {
		return nil
	}
	page, err := s.cfg.Queries.List(api.Query{Filter: api.Filter{ID: id}, Limit: 1})
	if err != nil || len(page.Items) == 0 {
		return nil
	}
	it := page.Items[0]
	fn := circuit.Of(it.Function)
	st, _, err := c.Store.Get(ctx, fn) // fresh: the watch may lag behind an open or a close
	if errors.Is(err, circuit.ErrNotFound) || errors.Is(err, circuit.ErrInvalid) || (err == nil && st.Phase == circuit.Closed) {
		return nil // no circuit, or one that is ignored, calls the function
	}
	if err != nil {
		return err
	}
	details := map[string]any{"id": id, "function": fn.String(), "phase": string(st.Phase), "since": st.Since, "forced": st.Forced}
	since := time.UnixMilli(st.Since).UTC().Format(time.RFC3339)
	if st.Forced {
		return &apiError{status: http.StatusConflict, body: api.Error{Code: circuit.ErrorCode, Details: details,
			Message: fmt.Sprintf("the circuit of %s was opened by an operator at %s: nothing calls the function, not even a probe; close it first (amends circuits close %s)", fn, since, fn)}}
	}
	if !probe {
		return &apiError{status: http.StatusConflict, body: api.Error{Code: circuit.ErrorCode, Details: details,
			Message: fmt.Sprintf("the circuit of %s is %s since %s: the replay would be refused and cost the record a retry; the recovery drain prepares it once the circuit closes, or ask for this replay to be the circuit's probe (\"probe\": true, amends prepare --probe)", fn, st.Phase, since)}}
	}
	return s.claimProbe(ctx, fn, it, actor, details)
}

// claimProbe claims the probe of fn's circuit for the operator's replay
// of record it; a probe under way is a conflict.
func (s *Server) claimProbe(ctx context.Context, fn circuit.Function, it api.Item, actor string, details map[string]any) error {
	claim := circuit.Claim{Instance: "operator " + actor, ID: uuid.NewString(), Event: it.EventID, Record: it.ID, Early: true}
	n, _, changed, err := s.cfg.Circuits.Store.Update(ctx, fn, func(cur circuit.State) (circuit.State, bool) {
		// The default policy's probe timeout bounds how long the claim
		// waits for the replay: the server does not know the function's.
		return circuit.Evolve(cur, s.cfg.Clock.Now(), circuit.DefaultPolicy, claim)
	})
	if err != nil {
		return err
	}
	if !changed || n.Probe == nil || n.Probe.ID != claim.ID {
		return &apiError{status: http.StatusConflict, body: api.Error{Code: circuit.ErrorCode, Details: details,
			Message: fmt.Sprintf("the circuit of %s has a probe under way (or this record's event already succeeded as one); try again once it has an outcome", fn)}}
	}
	return nil
}

// circuitAction decodes the body of a circuit open or close (verb) and
// its reason, required for the audit trail.
func circuitAction(body []byte, verb string) (api.CircuitAction, string, error) {
	var req api.CircuitAction
	if err := decodeStrict(body, &req, "the body of a circuit "+verb); err != nil {
		return req, "", err
	}
	reason := strings.TrimSpace(req.Reason)
	if reason == "" {
		return req, "", badRequest("reason", "a circuit %s needs a reason for the audit trail: add \"reason\": \"...\" to the body (amends circuits %s --reason)", verb, verb)
	}
	if ae := checkOperatorText("reason", reason, circuit.MaxReasonBytes); ae != nil {
		return req, "", ae
	}
	return req, reason, nil
}

// dryRunCircuit answers what change would make of f's circuit, without
// writing it; an invalid stored circuit is taken as a new one.
func dryRunCircuit(w http.ResponseWriter, r *http.Request, c *Circuits, f circuit.Function, change func(circuit.State) (circuit.State, bool)) error {
	cur, stored, err := readCircuit(r, c, f)
	if err != nil && !isInvalidCircuit(err) {
		return err
	}
	if err != nil {
		cur = circuit.New(f)
	}
	next, changed := change(cur)
	writeJSON(w, http.StatusOK, api.CircuitChange{Circuit: CircuitView(next, stored || changed), Changed: changed, DryRun: true})
	return nil
}
