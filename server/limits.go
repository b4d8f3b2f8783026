package server

import (
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/text"
	"github.com/amends-dev/amends/tracing"
)

// Limits of request values. Every value is checked against its limit
// before anything reaches NATS, where an overlong value would become an
// invalid subject or KV key (or exceed NATS's control line).
const (
	// MaxIDBytes bounds a record id (the path's {id}, the id filter): the
	// event store's limit on aggregate ids.
	MaxIDBytes = eventstore.MaxIDLength
	// MaxParamBytes bounds every other query parameter value, the cursor
	// included, and every name in a command body.
	MaxParamBytes = 256
	// MaxHeaderBytes bounds the headers the server stores with a command:
	// Idempotency-Key, X-Request-Id and Traceparent.
	MaxHeaderBytes = 256
)

// checkID checks a record id: 1 to MaxIDBytes bytes of valid UTF-8
// without control characters, the rules of eventstore.ValidateID.
func checkID(field, id string) *apiError {
	if id == "" {
		return badRequest(field, "%s is empty; it must be 1 to %d bytes of UTF-8 text", field, MaxIDBytes)
	}
	return checkText(field, id, MaxIDBytes)
}

// checkText checks a value of at most limit bytes of valid UTF-8 without
// control characters.
func checkText(field, v string, limit int) *apiError { return checkLine(field, v, limit, false) }

// checkLine is checkText, with tabs allowed if tabs.
func checkLine(field, v string, limit int, tabs bool) *apiError {
	if len(v) > limit {
		return badRequest(field, "%s is %d bytes, over the limit of %d", field, len(v), limit)
	}
	if !utf8.ValidString(v) {
		return badRequest(field, "%s %s is not valid UTF-8", field, quote(v))
	}
	for i, r := range v {
		if (r < 0x20 && !(tabs && r == '\t')) || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return badRequest(field, "%s has the control character %U at byte %d; send printable text", field, r, i)
		}
	}
	return nil
}

// checkOperatorText checks operator text (a reason) by text.Line, the one
// rule such text is taken and read back by: at most limit bytes of one
// line of UTF-8 without control characters or invisible ones (bidi
// controls, zero-width characters, line separators).
func checkOperatorText(field, v string, limit int) *apiError {
	if err := text.Line(v, limit); err != nil {
		return badRequest(field, "%s %s", field, err)
	}
	return nil
}

// refusedInText reports whether operator text may not hold r (see
// text.Refused).
func refusedInText(r rune) bool {
	_, refused := text.Refused(r)
	return refused
}

// quote quotes a value for a message, cut to its first 40 bytes.
func quote(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", text.Cut(s, 40), len(s))
	}
	return fmt.Sprintf("%q", s)
}

// cut shortens a value for a message to its first 200 bytes.
func cut(s string) string {
	if len(s) <= 200 {
		return s
	}
	return text.Cut(s, 200) + "..."
}

// noQuery refuses query parameters on an endpoint that takes none.
func noQuery(r *http.Request) error {
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := queryValues(r)
	if err != nil {
		return err
	}
	for k := range q {
		return badRequest(fieldName(k, "query"), "unknown query parameter %s; %s takes none", quote(k), r.Pattern)
	}
	return nil
}

// fieldName is a request's name of something (a query parameter, a body
// field) as details.field: itself, cut to MaxParamBytes; an empty name is
// whole, the thing that holds it ("query", "body").
func fieldName(s, whole string) string {
	if s == "" {
		return whole
	}
	return text.Cut(s, MaxParamBytes)
}

// pathID reads and checks the record id of the path.
func pathID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if ae := checkID("id", id); ae != nil {
		return "", ae
	}
	return id, nil
}

// commandMeta reads a command's headers, each checked against
// MaxHeaderBytes.
func commandMeta(r *http.Request, p principal, reason string) (aggregate.Meta, error) {
	m := aggregate.Meta{Actor: p.name, Reason: reason}
	for _, h := range []struct {
		name string
		to   *string
	}{{"Idempotency-Key", &m.CommandID}, {"X-Request-Id", &m.RequestID}, {"Traceparent", &m.TraceID}} {
		vs := r.Header.Values(h.name)
		if len(vs) > 1 {
			return m, badRequest(h.name, "the %s header is given %d times; send it once", h.name, len(vs))
		}
		if len(vs) == 0 {
			continue
		}
		if ae := checkText(h.name, vs[0], MaxHeaderBytes); ae != nil {
			return m, ae
		}
		// The trace id is stored with the command: it must name a trace.
		// (A read ignores a malformed traceparent, as W3C Trace Context
		// asks; a command would write it into the audit trail.)
		if h.name == "Traceparent" && !tracing.SpanContext(vs[0], "").IsValid() {
			return m, badRequest(h.name, "the Traceparent header %s is not a W3C traceparent (00-<32 hex digits of trace id>-<16 hex digits of parent id>-<2 hex digits of flags>, not all zeros); send a valid one or none", quote(vs[0]))
		}
		*h.to = vs[0]
	}
	return m, nil
}
