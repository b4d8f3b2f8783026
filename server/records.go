package server

import (
	"net/http"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/tracing"
)

func (s *Server) list(w http.ResponseWriter, r *http.Request, _ principal) error {
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	return s.writePage(w, q)
}

func (s *Server) listView(w http.ResponseWriter, r *http.Request, _ principal) error {
	raw := r.PathValue("view")
	if ae := checkText("view", raw, MaxParamBytes); ae != nil {
		return ae
	}
	v, err := parseView(raw)
	if err != nil {
		return err
	}
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	q.Filter.View = v
	return s.writePage(w, q)
}

func (s *Server) writePage(w http.ResponseWriter, q api.Query) error {
	page, err := s.cfg.Queries.List(q)
	if err != nil {
		if ae := queryError("", err); ae != nil {
			return ae
		}
		return err
	}
	if page.Items == nil {
		page.Items = []api.Item{}
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (s *Server) count(w http.ResponseWriter, r *http.Request, _ principal) error {
	f, err := requestFilter(r)
	if err != nil {
		return err
	}
	n, err := s.cfg.Queries.Count(f)
	if err != nil {
		if ae := queryError("", err); ae != nil {
			return ae
		}
		return err
	}
	writeJSON(w, http.StatusOK, api.CountResponse{Count: n})
	return nil
}

func (s *Server) summary(w http.ResponseWriter, r *http.Request, _ principal) error {
	by, err := summaryBy(r)
	if err != nil {
		return err
	}
	f, err := requestFilter(r)
	if err != nil {
		return err
	}
	sum, err := s.cfg.Queries.Summary(f)
	if err != nil {
		if ae := queryError("", err); ae != nil {
			return ae
		}
		return err
	}
	if err := s.byFingerprint(by, f, &sum); err != nil {
		return err
	}
	s.addRetired(r.Context(), f, &sum)
	writeJSON(w, http.StatusOK, sum)
	return nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, _ principal) error {
	_, v, err := s.pathRecord(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) history(w http.ResponseWriter, r *http.Request, _ principal) error {
	_, changes, err := s.pathHistory(r)
	if err != nil {
		return err
	}
	out := make([]api.HistoryEntry, 0, len(changes))
	for _, c := range changes {
		st := c.Stream
		e := api.HistoryEntry{
			Version: st.Version, Seq: st.Seq, CommandID: st.CommandID, RequestID: st.RequestID, TraceID: tracing.StreamTraceID(&st),
			CreateTime: st.CreateTime, Command: st.Headers[aggregate.HeaderCommand],
			Actor: st.Headers[aggregate.HeaderActor], Reason: st.Headers[aggregate.HeaderReason],
		}
		for k, v := range st.Headers {
			if k != aggregate.HeaderCommand && k != aggregate.HeaderActor && k != aggregate.HeaderReason {
				if e.Headers == nil {
					e.Headers = map[string]string{}
				}
				e.Headers[k] = v
			}
		}
		for _, ev := range st.Events {
			e.Events = append(e.Events, api.HistoryEvent{ID: ev.ID, Name: ev.Name, Body: ev.Body})
		}
		out = append(out, e)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// pathRecord reads the record the path names, for a request that takes no
// query: its id and view, or the API's error.
func (s *Server) pathRecord(r *http.Request) (string, api.View, error) {
	id, err := s.pathTarget(r)
	if err != nil {
		return "", api.View{}, err
	}
	v, err := s.cfg.Queries.Get(r.Context(), id)
	if err != nil {
		return "", api.View{}, recordError(id, err)
	}
	return id, v, nil
}

// pathHistory reads the history of the record the path names, for a
// request that takes no query.
func (s *Server) pathHistory(r *http.Request) (string, []projection.Change, error) {
	id, err := s.pathTarget(r)
	if err != nil {
		return "", nil, err
	}
	changes, err := s.cfg.Queries.History(r.Context(), id)
	if err != nil {
		return "", nil, recordError(id, err)
	}
	return id, changes, nil
}

// pathTarget is the record id of a request's path that takes no query.
func (s *Server) pathTarget(r *http.Request) (string, error) {
	if err := noQuery(r); err != nil {
		return "", err
	}
	return pathID(r)
}

// recordError is the API's error for a record's read, queryError's if it
// has one.
func recordError(id string, err error) error {
	if ae := queryError(id, err); ae != nil {
		return ae
	}
	return err
}
