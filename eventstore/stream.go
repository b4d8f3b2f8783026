package eventstore

import (
	"encoding/json"
	"fmt"
)

// DefaultRevision is the revision an Event gets when it names none.
const DefaultRevision = "0.0.1"

// Event is one domain event inside a Stream.
type Event struct {
	// ID identifies the event; unique across the store (see ValidateID).
	ID string `json:"id"`
	// Name is the event's name, e.g. "execution_failed_created" (see ValidateName).
	Name string `json:"name"`
	// Revision is the schema revision of Body; empty means DefaultRevision.
	Revision string `json:"revision,omitempty"`
	// Body is the event's JSON document. It must be valid JSON.
	Body json.RawMessage `json:"body"`
}

// Stream is what one command appended to one aggregate: its events plus the
// command's metadata. It is stored as one message, so its events are atomic.
type Stream struct {
	// ID identifies the stream and is its idempotency key (see ValidateID).
	ID string `json:"id"`
	// Aggregate is the aggregate the stream belongs to.
	Aggregate AggregateID `json:"aggregate"`
	// Version is the stream's 1-based position in the aggregate's history.
	Version uint64 `json:"version"`
	// CommandID identifies the command that produced the stream.
	CommandID string `json:"commandId,omitempty"`
	// RequestID identifies the request that carried the command; commands of
	// one request share it.
	RequestID string `json:"requestId,omitempty"`
	// TraceID links the stream to a distributed trace.
	TraceID string `json:"traceId,omitempty"`
	// Headers carry free metadata such as the actor and reason of an
	// operator command.
	Headers map[string]string `json:"headers,omitempty"`
	// CreateTime is when the command ran, in epoch milliseconds.
	CreateTime int64 `json:"createTime"`
	// Events are the stream's events, at least one.
	Events []Event `json:"events"`
	// State optionally carries the aggregate's state after this stream, so a
	// reader of the current state needs only the last stream.
	State json.RawMessage `json:"state,omitempty"`

	// Seq is the store's sequence of the stream once committed; 0 before.
	// It is not part of the stored document.
	Seq uint64 `json:"-"`
	// PrevSeq is the store's sequence of the aggregate's previous stream
	// (version Version-1): 0 for version 1 and before the stream is
	// committed. A store sets it with Seq on every read, decode and
	// append; it is not part of the stored document. A subscriber that
	// keeps per-aggregate progress uses it to tell whether the version
	// before was already delivered.
	PrevSeq uint64 `json:"-"`
	// TraceParent and TraceState are the W3C trace context of the append
	// that stored the stream, which the store keeps in the message's
	// headers, not in the document; empty when the appender had no span.
	// A store sets them on read; an append takes the trace context from
	// its context instead.
	TraceParent string `json:"-"`
	TraceState  string `json:"-"`
}

// Trace returns the trace the stream carries: the TraceID its appender
// set, and the W3C traceparent and tracestate of its append (see
// TraceParent). Package tracing reads a stream's trace through it.
func (s *Stream) Trace() (id, parent, state string) { return s.TraceID, s.TraceParent, s.TraceState }

// Validate reports whether s can be appended: ids, names, version, at least
// one event, valid JSON bodies. The error matches ErrInvalid and names the
// field. Size limits are the store's to check.
func (s *Stream) Validate() error { return s.validate(true) }

// validate checks s; checkJSON says whether bodies and state still need a
// JSON syntax check (Decode's parser has already done it).
func (s *Stream) validate(checkJSON bool) error {
	if err := ValidateID("stream id", s.ID); err != nil {
		return err
	}
	if err := s.Aggregate.Validate(); err != nil {
		return err
	}
	if s.Version == 0 {
		return invalid("stream %s version is 0; versions start at 1", describe(s.ID))
	}
	if len(s.Events) == 0 {
		return invalid("stream %s has no events; a stream holds at least one", describe(s.ID))
	}
	if err := validateHeaders(s.Headers); err != nil {
		return err
	}
	for i := range s.Events {
		if err := s.Events[i].validate(s.ID, i, checkJSON); err != nil {
			return err
		}
	}
	if checkJSON && len(s.State) > 0 && !json.Valid(s.State) {
		return invalid("stream %s state is not valid JSON", describe(s.ID))
	}
	return nil
}

// validate checks event i of stream id: its id, name, revision and body
// (valid JSON when checkJSON).
func (e *Event) validate(id string, i int, checkJSON bool) error {
	if err := ValidateID("event id", e.ID); err != nil {
		return fmt.Errorf("stream %s event %d: %w", describe(id), i, err)
	}
	if err := ValidateName("event name", e.Name); err != nil {
		return fmt.Errorf("stream %s event %d: %w", describe(id), i, err)
	}
	if len(e.Revision) > MaxNameLength {
		return invalid("stream %s event %d revision is %d characters, over the limit of %d", describe(id), i, len(e.Revision), MaxNameLength)
	}
	if len(e.Body) == 0 {
		return invalid("stream %s event %d (%s) has an empty body; use {} for an event without fields", describe(id), i, e.Name)
	}
	if checkJSON && !json.Valid(e.Body) {
		return invalid("stream %s event %d (%s) body is not valid JSON", describe(id), i, e.Name)
	}
	return nil
}

// validateHeaders checks a stream's header names and values (no control
// characters but tabs).
func validateHeaders(headers map[string]string) error {
	for k, v := range headers {
		if err := ValidateID("header name", k); err != nil {
			return err
		}
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 && v[i] != '\t' {
				return invalid("header %q has a control character at byte %d", k, i)
			}
		}
	}
	return nil
}
