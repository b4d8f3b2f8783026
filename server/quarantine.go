package server

import (
	"context"
	"errors"
	"net/http"
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

func (s *Server) listQuarantine(w http.ResponseWriter, r *http.Request, _ principal) error {
	q, err := queryValues(r)
	if err != nil {
		return err
	}
	if err := checkParams(q, quarantineParams); err != nil {
		return err
	}
	query := quarantine.Query{Limit: defaultQuarantineLimit, Consumer: q.Get("consumer")}
	if query.After, err = cursorParam(q); err != nil {
		return err
	}
	if query.Limit, err = limitParam(q, query.Limit, quarantine.MaxLimit); err != nil {
		return err
	}
	if s.cfg.Quarantine == nil {
		return notConfigured("this server keeps no quarantine")
	}
	page, err := s.cfg.Quarantine.List(r.Context(), query)
	if errors.Is(err, quarantine.ErrInvalidQuery) {
		return badRequest("consumer", "%s", strings.TrimSuffix(err.Error(), ": "+quarantine.ErrInvalidQuery.Error()))
	}
	if err != nil {
		return err
	}
	out := api.QuarantinePage{Entries: make([]api.QuarantineEntry, len(page.Entries))}
	for i, e := range page.Entries {
		out.Entries[i] = quarantineEntry(e)
	}
	if page.Next != 0 {
		out.Next = strconv.FormatUint(page.Next, 10)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// quarantineEntry is e as the API shows it: the same fields and values.
func quarantineEntry(e quarantine.Entry) api.QuarantineEntry {
	return api.QuarantineEntry{ID: e.ID, Stream: e.Stream, Seq: e.Seq, Subject: e.Subject, Consumer: e.Consumer,
		Reason: api.QuarantineReason(e.Reason), Error: e.Error, Deliveries: e.Deliveries, At: e.At, Kind: e.Kind, Bucket: e.Bucket, Key: e.Key}
}
