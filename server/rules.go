package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/rules"
)

// ruleRoutes are the routes of the operators' rules (package rules) and of
// a record's remaining retry schedule; routeTable lists them.
func (s *Server) ruleRoutes() []route {
	return []route{
		{method: "GET", pattern: "/api/v1/rules", role: RoleViewer, handler: s.listRules},
		{method: "POST", pattern: "/api/v1/rules", role: RoleOperator, handler: s.addRule},
		{method: "GET", pattern: "/api/v1/rules/{rule}", role: RoleViewer, handler: s.getRule},
		{method: "POST", pattern: "/api/v1/rules/{rule}/remove", role: RoleOperator, handler: s.removeRule},
		{method: "POST", pattern: "/api/v1/rules/{rule}/apply", role: RoleOperator, handler: s.applyRule},
		{method: "GET", pattern: "/api/v1/records/{id}/schedule", role: RoleViewer, handler: s.schedule},
	}
}

func (s *Server) ruleStore() (*rules.Store, error) {
	if s.cfg.Rules == nil {
		return nil, notConfigured("this server keeps no rules")
	}
	return s.cfg.Rules, nil
}

// ruleError maps an error of the rules store to its response.
func ruleError(id string, err error) error {
	msg := func(sentinel error) string { return strings.TrimSuffix(err.Error(), ": "+sentinel.Error()) }
	switch {
	case errors.Is(err, rules.ErrNotFound):
		return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound",
			Message: "no rule " + quote(id) + "; list the rules with GET /api/v1/rules (amends rules list)", Details: map[string]any{"id": id}}}
	case errors.Is(err, rules.ErrInvalidRule):
		return &apiError{status: http.StatusUnprocessableEntity, body: api.Error{Code: aggregate.ErrIllegalArgument.Error(), Message: msg(rules.ErrInvalidRule)}}
	case errors.Is(err, rules.ErrTooMany):
		return &apiError{status: http.StatusConflict, body: api.Error{Code: "TooManyRules", Message: msg(rules.ErrTooMany)}}
	}
	return err
}

// ruleView is r as the API shows it: live at the server's now, with the
// records it matches now.
func (s *Server) ruleView(r api.Rule) api.Rule {
	r.Live = rules.Live(&r, s.cfg.Clock.Now())
	if r.Audit == nil {
		r.Audit = []api.RuleAudit{}
	}
	f := rules.FilterOf(&r)
	for _, st := range []aggregate.Status{aggregate.StatusFailed, aggregate.StatusPrepared} {
		f.Status = st
		if n, err := s.cfg.Queries.Count(f); err == nil {
			r.Matching += n
		}
	}
	return r
}

func (s *Server) listRules(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	st, err := s.ruleStore()
	if err != nil {
		return err
	}
	all, err := st.List(r.Context(), true)
	if err != nil {
		return err
	}
	out := api.RuleList{Rules: make([]api.Rule, 0, len(all))}
	for _, rule := range all {
		out.Rules = append(out.Rules, s.ruleView(rule))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) addRule(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	st, err := s.ruleStore()
	if err != nil {
		return err
	}
	req, err := readJSON[api.RuleRequest](s, w, r, "the body of a rule")
	if err != nil {
		return err
	}
	action, err := rules.ParseAction(req.Action)
	if err != nil {
		return badRequest("action", "%s", strings.TrimSuffix(err.Error(), ": "+rules.ErrInvalidRule.Error()))
	}
	if req.RetrySpec != nil {
		// The API's rules for a retry spec, as apply_retry_spec's.
		if err := checkRetrySpec(aggregate.ApplyRetrySpec(*req.RetrySpec)); err != nil {
			return prefixField("retrySpec.", err)
		}
	}
	added, err := st.Add(r.Context(), api.Rule{Match: req.Match, Action: action, RetrySpec: req.RetrySpec,
		Reason: req.Reason, Actor: p.name, ExpiresAt: req.ExpiresAt})
	if err != nil {
		return ruleError("", err)
	}
	writeJSON(w, http.StatusCreated, s.ruleView(added))
	return nil
}

// ruleTarget checks a request on one rule (no query, a valid rule id in
// the path) and returns the rule store and the id.
func (s *Server) ruleTarget(r *http.Request) (*rules.Store, string, error) {
	if err := noQuery(r); err != nil {
		return nil, "", err
	}
	st, err := s.ruleStore()
	if err != nil {
		return nil, "", err
	}
	id, err := ruleID(r)
	return st, id, err
}

func ruleID(r *http.Request) (string, error) {
	id := r.PathValue("rule")
	if ae := checkID("rule", id); ae != nil {
		return "", ae
	}
	return id, nil
}

func (s *Server) getRule(w http.ResponseWriter, r *http.Request, _ principal) error {
	st, id, err := s.ruleTarget(r)
	if err != nil {
		return err
	}
	rule, err := st.Get(r.Context(), id)
	if err != nil {
		return ruleError(id, err)
	}
	writeJSON(w, http.StatusOK, s.ruleView(rule))
	return nil
}

func (s *Server) removeRule(w http.ResponseWriter, r *http.Request, p principal) error {
	st, id, err := s.ruleTarget(r)
	if err != nil {
		return err
	}
	req, err := readJSON[api.RuleRemoveRequest](s, w, r, "the body of a rule removal")
	if err != nil {
		return err
	}
	removed, err := st.Remove(r.Context(), id, p.name, req.Reason)
	if err != nil {
		return ruleError(id, err)
	}
	writeJSON(w, http.StatusOK, s.ruleView(removed))
	return nil
}

func (s *Server) applyRule(w http.ResponseWriter, r *http.Request, p principal) error {
	st, id, err := s.ruleTarget(r)
	if err != nil {
		return err
	}
	req, err := readJSON[api.RuleApplyRequest](s, w, r, "the body of a rule apply")
	if err != nil {
		return err
	}
	if !bounds.Within(req.Limit, 0, s.cfg.MaxBatch) {
		return badRequest("limit", "limit must be from 1 to %d (0 or absent: %d), got %d", s.cfg.MaxBatch, s.cfg.MaxBatch, req.Limit)
	}
	if ae := checkText("requestId", req.RequestID, MaxParamBytes); ae != nil {
		return ae
	}
	if _, err := checkReason("a rule apply", false, &req.Reason); err != nil {
		return err
	}
	limit := req.Limit
	if limit == 0 {
		limit = s.cfg.MaxBatch
	}
	res, err := st.Apply(r.Context(), id, s.cfg.Queries, s.cfg.Commands, rules.ApplyOptions{
		DryRun: req.DryRun, RequestID: req.RequestID, Limit: min(limit, rules.MaxApply), RatePerSecond: req.RatePerSecond,
		Actor: p.name, Reason: strings.TrimSpace(req.Reason), Now: s.cfg.Clock.Now(),
	})
	if err != nil {
		if ae := queryError("", err); ae != nil {
			return ae
		}
		return ruleError(id, err)
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// schedule answers the automatic retries a record has left.
func (s *Server) schedule(w http.ResponseWriter, r *http.Request, _ principal) error {
	id, v, err := s.pathRecord(r)
	if err != nil {
		return err
	}
	out := api.RecordSchedule{ID: id, Retries: aggregate.RemainingSchedule(v.State, 0)}
	if s.cfg.Rules != nil && len(out.Retries) > 0 {
		all, err := s.cfg.Rules.List(r.Context(), false)
		if err != nil {
			return err
		}
		x := rules.Failure{Function: v.State.Function, ErrorCode: v.State.Error.ErrorCode, Fingerprint: v.State.Error.Fingerprint}
		if rule, ok := rules.NewSet(all).Match(x, s.cfg.Clock.Now()); ok && rule.Action == rules.ParkUntilDeploy {
			out.ParkedBy, out.Retries = rule.ID, nil
		}
	}
	if out.Retries == nil {
		out.Retries = []aggregate.ScheduledRetry{}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// fingerprintSummarizer is the optional part of Queries that groups a
// summary by fingerprint. *projection.Index satisfies it.
type fingerprintSummarizer interface {
	FingerprintSummary(f api.Filter) ([]api.FingerprintGroup, error)
}

var _ fingerprintSummarizer = (*projection.Index)(nil)

// summaryBy takes the parameter "by" (empty or "fingerprint") off the
// summary's query, so that the rest is the filter.
func summaryBy(r *http.Request) (string, error) {
	q := r.URL.Query()
	vs, ok := q["by"]
	if !ok {
		return "", nil
	}
	if len(vs) != 1 || vs[0] != "fingerprint" {
		return "", badRequest("by", "by must be fingerprint, given once, got %s", quote(strings.Join(vs, ",")))
	}
	q.Del("by")
	r.URL.RawQuery = q.Encode()
	return vs[0], nil
}

// byFingerprint adds the fingerprint groups to sum when by asks for them.
func (s *Server) byFingerprint(by string, f api.Filter, sum *api.Summary) error {
	if by == "" {
		return nil
	}
	fs, ok := s.cfg.Queries.(fingerprintSummarizer)
	if !ok {
		return notConfigured("this server cannot group by fingerprint")
	}
	groups, err := fs.FingerprintSummary(f)
	if err != nil {
		if ae := queryError("", err); ae != nil {
			return ae
		}
		return err
	}
	sum.Fingerprints = groups
	if sum.Fingerprints == nil {
		sum.Fingerprints = []api.FingerprintGroup{}
	}
	return nil
}
