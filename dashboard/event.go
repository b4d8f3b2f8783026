package dashboard

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/server"
)

// OriginalEvent is the body of GET /ui/v1/records/{id}/event: the event
// whose handling failed, as the event store holds it.
type OriginalEvent struct {
	// StreamID, Aggregate, Version, Seq, CreateTime, CommandID and
	// RequestID describe the stream (command) that carried the event.
	StreamID   string                 `json:"streamId"`
	Aggregate  eventstore.AggregateID `json:"aggregate"`
	Version    uint64                 `json:"version"`
	Seq        uint64                 `json:"seq"`
	CreateTime int64                  `json:"createTime"`
	CommandID  string                 `json:"commandId,omitempty"`
	RequestID  string                 `json:"requestId,omitempty"`
	// Event is the event with its body.
	Event eventstore.Event `json:"event"`
}

// pathID reads and checks the {id} of the path.
func pathID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if err := eventstore.ValidateID("id", id); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", strings.TrimSuffix(err.Error(), ": "+eventstore.ErrInvalid.Error()), map[string]any{"field": "id"})
		return "", false
	}
	return id, true
}

// record loads record id from the index, answering 404 or 503 itself.
func (d *Dashboard) record(w http.ResponseWriter, r *http.Request) (api.View, bool) {
	id, ok := pathID(w, r)
	if !ok {
		return api.View{}, false
	}
	v, err := d.cfg.Index.Get(r.Context(), id)
	switch {
	case errors.Is(err, projection.ErrNotFound):
		writeError(w, http.StatusNotFound, "NotFound", "no ExecutionFailed record with id "+clip(id)+"; search for records on the dashboard's search page", map[string]any{"id": id})
		return v, false
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "Unavailable", "the record could not be read now; try again in a moment", map[string]any{"id": id})
		return v, false
	}
	return v, true
}

func (d *Dashboard) event(w http.ResponseWriter, r *http.Request) {
	if !checkQuery(w, r) {
		return
	}
	v, ok := d.record(w, r)
	if !ok {
		return
	}
	st, i, err := d.original(r.Context(), v.State.EventID)
	if errors.Is(err, eventstore.ErrNotFound) || errors.Is(err, eventstore.ErrInvalid) {
		writeError(w, http.StatusNotFound, "EventNotFound", "the event store no longer holds event "+clip(v.State.EventID.ID)+
			" (it may have been removed by the stream's limits); a replay of this record would fail the same way", map[string]any{"eventId": v.State.EventID.ID})
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "Unavailable", "the event store could not be read now; try again in a moment", nil)
		return
	}
	if d.cfg.Audit != nil {
		e := api.AuditEntry{Kind: api.AuditEventRead, Method: r.Method, Route: r.Pattern, Record: v.State.ID, Event: v.State.EventID.ID}
		if who, ok := server.RequesterFrom(r.Context()); ok {
			e.Actor, e.Role, e.Client, e.Credential = who.Name, string(who.Role), who.Client, who.Credential
		}
		if err := d.cfg.Audit.Record(r.Context(), e); err != nil {
			d.log.Warn("dashboard: a read of an original event could not be audited; refused", "record", v.State.ID, "err", err)
			writeError(w, http.StatusServiceUnavailable, "Unavailable", "the read of the original event could not be written to the audit log, so it is not shown; try again in a moment", nil)
			return
		}
	}
	writeJSON(w, http.StatusOK, OriginalEvent{
		StreamID: st.ID, Aggregate: st.Aggregate, Version: st.Version, Seq: st.Seq, CreateTime: st.CreateTime,
		CommandID: st.CommandID, RequestID: st.RequestID, Event: st.Events[i],
	})
}

// original finds the stream holding event eid, as a replay does
// (eventstore.Locate).
func (d *Dashboard) original(ctx context.Context, eid aggregate.EventID) (eventstore.Stream, int, error) {
	return eventstore.Locate(ctx, d.cfg.Events, eid.AggregateID.StoreID(), eid.ID, eid.Version, eid.Seq)
}
