package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/audit"
)

// auditParams are the query parameters of GET /api/v1/audit.
var auditParams = []string{"kind", "actor", "record", "from", "to", "cursor", "limit"}

// listAudit answers a page of the audit log (operators only: it names who
// read which payload, and from where).
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, _ principal) error {
	q, err := queryValues(r)
	if err != nil {
		return err
	}
	if err := checkParams(q, auditParams); err != nil {
		return err
	}
	query := audit.Query{Actor: q.Get("actor"), Record: q.Get("record")}
	if v := q.Get("kind"); v != "" {
		k, err := audit.ParseKind(v)
		if err != nil {
			return badRequest("kind", "%v", err)
		}
		query.Kind = k
	}
	for _, p := range []struct {
		name string
		to   *int64
	}{{"from", &query.From}, {"to", &query.To}} {
		if v := q.Get(p.name); v != "" {
			t, err := parseTime(q, p.name)
			if err != nil {
				return err
			}
			*p.to = t.UnixMilli()
		}
	}
	if query.After, err = cursorParam(q); err != nil {
		return err
	}
	if query.Limit, err = limitParam(q, query.Limit, audit.MaxLimit); err != nil {
		return err
	}
	if s.cfg.Audit == nil {
		return notConfigured("this server keeps no audit log")
	}
	page, err := s.cfg.Audit.Query(r.Context(), query)
	if errors.Is(err, audit.ErrInvalidQuery) {
		return badRequest("query", "%s", strings.TrimSuffix(err.Error(), ": "+audit.ErrInvalidQuery.Error()))
	}
	if err != nil {
		return err
	}
	out := api.AuditPage{Entries: page.Entries, Skipped: page.Skipped}
	if out.Entries == nil {
		out.Entries = []api.AuditEntry{}
	}
	if page.Next != 0 {
		out.Next = strconv.FormatUint(page.Next, 10)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
