package server

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/quarantine"
)

// QuarantineLister is what GET /api/v1/quarantine reads.
// *quarantine.Quarantine satisfies it.
type QuarantineLister interface {
	List(ctx context.Context, q quarantine.Query) (quarantine.Page, error)
}

// quarantineParams are the query parameters of GET /api/v1/quarantine.
var quarantineParams = []string{"consumer", "cursor", "limit"}

// defaultQuarantineLimit is the page size of GET /api/v1/quarantine
// without a limit.
const defaultQuarantineLimit = 100

// QuarantinePage is the body of GET /api/v1/quarantine: entries oldest
// first, and the cursor of the next page.
type QuarantinePage = api.QuarantinePage

func (s *Server) listQuarantine(w http.ResponseWriter, r *http.Request, _ principal) error {
	q, err := queryValues(r)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(quarantineParams, k) {
			return badRequest(fieldName(k, "query"), "unknown query parameter %s; the parameters are %s", quote(k), strings.Join(quarantineParams, ", "))
		}
		if n := len(q[k]); n > 1 {
			return badRequest(k, "query parameter %s is given %d times; give it once", k, n)
		}
		if ae := checkText(k, q.Get(k), MaxParamBytes); ae != nil {
			return ae
		}
	}
	query := quarantine.Query{Limit: defaultQuarantineLimit, Consumer: q.Get("consumer")}
	if v := q.Get("cursor"); v != "" {
		if query.After, err = strconv.ParseUint(v, 10, 64); err != nil {
			return badRequest("cursor", "cursor must be the next of a previous page, a whole number, got %s", quote(v))
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > quarantine.MaxLimit {
			return badRequest("limit", "limit must be a whole number from 1 to %d, got %s", quarantine.MaxLimit, quote(v))
		}
		query.Limit = n
	}
	if s.cfg.Quarantine == nil {
		return &apiError{status: http.StatusNotFound, body: Error{Code: "NotFound", Message: "this server keeps no quarantine"}}
	}
	page, err := s.cfg.Quarantine.List(r.Context(), query)
	if errors.Is(err, quarantine.ErrInvalidQuery) {
		return badRequest("consumer", "%s", strings.TrimSuffix(err.Error(), ": "+quarantine.ErrInvalidQuery.Error()))
	}
	if err != nil {
		return err
	}
	out := QuarantinePage{Entries: page.Entries}
	if out.Entries == nil {
		out.Entries = []quarantine.Entry{}
	}
	if page.Next != 0 {
		out.Next = strconv.FormatUint(page.Next, 10)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
