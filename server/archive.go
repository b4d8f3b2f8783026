package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/archive"
	"github.com/amends-dev/amends/eventstore"
)

// Archive serves the records retention archived before it removed them:
// the sweeps, a sweep's records, one record's history, and a restore that
// appends archived histories to the event store again.
type Archive struct {
	// Sink is the archive (serve's --archive).
	Sink archive.Sink
	// Store is what a restore appends to (the compensation stream's
	// store); nil refuses restores.
	Store archive.Store
}

// Bounds of the archive routes.
const (
	defaultArchiveLimit = 100
	maxArchiveLimit     = 1000
)

var archiveRecordParams = []string{"cursor", "limit"}

// errEnough stops archive.Each once a handler has what it needs, so that a
// page or a record does not read the rest of the sweep.
var errEnough = errors.New("enough")

func (s *Server) archive() (*Archive, error) {
	if s.cfg.Archive == nil || s.cfg.Archive.Sink == nil {
		return nil, notConfigured("this server has no archive: serve archives removed records with --retention and --archive dir:/path or objectstore:BUCKET")
	}
	return s.cfg.Archive, nil
}

// archiveError maps the archive's errors: a sweep or an object it does
// not hold is a 404, one that does not verify a 502 naming it.
func archiveError(sweep uint64, err error) error {
	switch {
	case errors.Is(err, archive.ErrNotFound):
		return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound",
			Message: fmt.Sprintf("the archive holds no sweep %d (or a part of it is missing); list the sweeps with GET /api/v1/archive", sweep),
			Details: map[string]any{"sweep": sweep}}}
	case errors.Is(err, archive.ErrInvalid), errors.Is(err, archive.ErrTooLarge):
		return &apiError{status: http.StatusBadGateway, body: api.Error{Code: "ArchiveInvalid",
			Message: fmt.Sprintf("sweep %d of the archive does not verify: %v", sweep, err), Details: map[string]any{"sweep": sweep}}}
	}
	return err
}

func sweepParam(r *http.Request) (uint64, error) {
	v := r.PathValue("sweep")
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 {
		return 0, badRequest("sweep", "the sweep must be a sweep's number, a whole number from 1, got %s; list them with GET /api/v1/archive", quote(cut(v)))
	}
	return n, nil
}

func archivedRecord(o archive.Object, r archive.Record) api.ArchivedRecord {
	return archive.Summarize(o, r)
}

func (s *Server) listSweeps(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	a, err := s.archive()
	if err != nil {
		return err
	}
	sweeps, err := archive.ListSweeps(r.Context(), a.Sink)
	if err != nil {
		return fmt.Errorf("list the archive %s: %w", a.Sink, err)
	}
	// ListSweeps's list is never nil: no sweep is "sweeps": [].
	writeJSON(w, http.StatusOK, api.ArchiveSweeps{Archive: a.Sink.String(), Sweeps: sweeps})
	return nil
}

func (s *Server) listArchived(w http.ResponseWriter, r *http.Request, _ principal) error {
	q, err := queryValues(r)
	if err != nil {
		return err
	}
	if err := checkParams(q, archiveRecordParams); err != nil {
		return err
	}
	after, err := cursorParam(q)
	if err != nil {
		return err
	}
	limit, err := limitParam(q, defaultArchiveLimit, maxArchiveLimit)
	if err != nil {
		return err
	}
	sweep, err := sweepParam(r)
	if err != nil {
		return err
	}
	a, err := s.archive()
	if err != nil {
		return err
	}
	out := api.ArchiveRecords{Sweep: sweep, Records: []api.ArchivedRecord{}}
	var n uint64
	_, err = archive.Each(r.Context(), a.Sink, sweep, nil, func(o archive.Object, rec archive.Record) error {
		n++
		switch {
		case n <= after:
		case len(out.Records) < limit:
			out.Records = append(out.Records, archivedRecord(o, rec))
		default: // one past the page: there is a next page
			out.Next = strconv.FormatUint(n-1, 10)
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return archiveError(sweep, err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getArchived(w http.ResponseWriter, r *http.Request, _ principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	sweep, err := sweepParam(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := eventstore.ValidateID("id", id); err != nil {
		return badRequest("id", "%v", err)
	}
	a, err := s.archive()
	if err != nil {
		return err
	}
	var out *api.ArchivedHistory
	if _, err := archive.Each(r.Context(), a.Sink, sweep, map[string]bool{id: true}, func(o archive.Object, rec archive.Record) error {
		out = &api.ArchivedHistory{Record: archivedRecord(o, rec), History: rec.Streams}
		return errEnough
	}); err != nil && !errors.Is(err, errEnough) {
		return archiveError(sweep, err)
	}
	if out == nil {
		return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound",
			Message: fmt.Sprintf("sweep %d holds no record %s; list its records with GET /api/v1/archive/%d", sweep, id, sweep),
			Details: map[string]any{"sweep": sweep, "id": id}}}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// restoreArchived appends the archived histories of a sweep's records (or
// those named) to the event store again; audited unless a dry run.
func (s *Server) restoreArchived(w http.ResponseWriter, r *http.Request, p principal) error {
	if err := noQuery(r); err != nil {
		return err
	}
	sweep, err := sweepParam(r)
	if err != nil {
		return err
	}
	req, err := readJSON[api.ArchiveRestoreRequest](s, w, r, "the body of a restore")
	if err != nil {
		return err
	}
	reason, err := checkReason("a restore", true, &req.Reason)
	if err != nil {
		return err
	}
	ids, err := restoreIDs(req.Records)
	if err != nil {
		return err
	}
	a, err := s.archive()
	if err != nil {
		return err
	}
	if a.Store == nil {
		return notConfigured("this server cannot restore: it has no event store to append to")
	}
	out := api.ArchiveRestoreResult{Sweep: sweep, DryRun: req.DryRun, Results: []api.RestoredRecord{}, Counts: map[string]int{}}
	found, err := archive.Each(r.Context(), a.Sink, sweep, ids, func(_ archive.Object, rec archive.Record) error {
		res, err := archive.Restore(r.Context(), a.Store, rec, req.DryRun)
		if err != nil {
			return err
		}
		out.Results = append(out.Results, api.RestoredRecord(res))
		out.Counts[res.Outcome]++
		return nil
	})
	if !req.DryRun && len(out.Results) > 0 {
		s.audit(r, api.AuditEntry{Kind: api.AuditArchiveRestore, Actor: p.name, Role: string(p.role), Credential: p.credential(false),
			Reason: fmt.Sprintf("sweep %d of %s: %s; %s", sweep, a.Sink, restoreCounts(out.Counts), reason)})
	}
	if err != nil {
		return archiveError(sweep, err)
	}
	if found < len(ids) {
		out.Missing = missingRecords(req.Records, out.Results)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// restoreIDs checks a restore's record ids (at most
// api.MaxRestoreRecords UUIDs) and returns them as a set.
func restoreIDs(records []string) (map[string]bool, error) {
	if len(records) > api.MaxRestoreRecords {
		return nil, badRequest("records", "a restore names at most %d records, got %d; restore the whole sweep (no records) instead", api.MaxRestoreRecords, len(records))
	}
	ids := map[string]bool{}
	for i, id := range records {
		if uuid.Validate(id) != nil {
			return nil, badRequest("records", "records[%d] is not a record id (a UUID): %s", i, quote(cut(id)))
		}
		ids[id] = true
	}
	return ids, nil
}

// restoreCounts says how many records a restore left in each outcome.
func restoreCounts(counts map[string]int) string {
	out := make([]string, 0, len(counts))
	for _, o := range []string{archive.Restored, archive.Completed, archive.Present, archive.Diverged} {
		if counts[o] > 0 {
			out = append(out, fmt.Sprintf("%s %d", o, counts[o]))
		}
	}
	return strings.Join(out, ", ")
}

// missingRecords are the records asked for that the sweep did not hold,
// once each.
func missingRecords(asked []string, results []api.RestoredRecord) []string {
	seen := map[string]bool{}
	for _, res := range results {
		seen[res.ID] = true
	}
	var missing []string
	for _, id := range asked {
		if !seen[id] {
			seen[id] = true
			missing = append(missing, id)
		}
	}
	return missing
}
