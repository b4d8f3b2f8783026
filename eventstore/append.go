package eventstore

import (
	"encoding/json"
	"time"
)

// NewEvent is an event to append, before it has an id: its name and its
// body, which NewStream encodes as JSON.
type NewEvent struct {
	// Name is the event's name (see ValidateName), e.g. "invoice_issued".
	Name string
	// Body is encoded with encoding/json; a json.RawMessage is taken as it
	// is. A nil Body is stored as {}.
	Body any
	// Revision is the body's schema revision; empty means DefaultRevision.
	Revision string
}

// NewStream returns the stream that appends events to a as one command:
// the stream, its command and each event get an id from newID, and
// CreateTime is now in epoch milliseconds. Version is left 0 for the store
// to set. newID must return unique ids (a UUID generator does).
//
// It returns an error matching ErrInvalid that names the event for a body
// that cannot be encoded, and the errors of Stream.Validate. It does no
// I/O and is safe for concurrent use if newID is.
func NewStream(a AggregateID, now time.Time, newID func() string, events ...NewEvent) (Stream, error) {
	st := Stream{ID: newID(), Aggregate: a, CommandID: newID(), CreateTime: now.UnixMilli(), Events: make([]Event, len(events))}
	for i, e := range events {
		body := json.RawMessage("{}")
		if e.Body != nil {
			b, err := json.Marshal(e.Body)
			if err != nil {
				return Stream{}, invalid("event %d (%s) body cannot be encoded as JSON: %v", i, e.Name, err)
			}
			body = b
		}
		st.Events[i] = Event{ID: newID(), Name: e.Name, Revision: e.Revision, Body: body}
	}
	v := st
	v.Version = 1 // validated as a first version; the store sets the real one
	if err := v.validate(false); err != nil {
		return Stream{}, err
	}
	return st, nil
}
