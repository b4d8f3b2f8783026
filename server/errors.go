package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/projection/fanout"
	"github.com/amends-dev/amends/projection/index"
)

// ErrInsecureBind: the server would listen beyond loopback without tokens.
var ErrInsecureBind = errors.New("server: refusing to serve without tokens beyond loopback")

// ErrNoCredentials: a change of the tokens (SetTokens) would leave a
// server that authenticates with nothing to authenticate by; the last good
// tokens are kept.
var ErrNoCredentials = errors.New("server: the tokens would leave the server no way to authenticate; the last good tokens are kept")

// apiError is an error with its HTTP status.
type apiError struct {
	status int
	body   api.Error
}

func (e *apiError) Error() string { return e.body.Message }

func badRequest(field, format string, args ...any) *apiError {
	e := &apiError{status: http.StatusBadRequest, body: api.Error{Code: "BadRequest", Message: fmt.Sprintf(format, args...)}}
	if field != "" {
		e.body.Details = map[string]any{"field": field}
	}
	return e
}

// notConfigured is the 404 of a part this server was started without
// (no circuits, no holds, no audit log, ...): code NotConfigured, so that
// a client can tell it from an unknown record, hold or circuit (NotFound).
func notConfigured(message string) *apiError {
	return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotConfigured", Message: message}}
}

// notFound is the 404 of an unknown record.
func notFound(id string) *apiError {
	return &apiError{status: http.StatusNotFound, body: api.Error{
		Code:    "NotFound",
		Message: fmt.Sprintf("no ExecutionFailed record with id %s; list records with GET /api/v1/records (amends list)", id),
		Details: map[string]any{"id": id},
	}}
}

// commandError maps an error of Execute to its response. The aggregate's
// message is kept as it is: 409 when the record's state refuses the
// command, 422 when a value is refused. details holds the record id and,
// for a refusal on an existing record, what an operator can act on
// (aggregate.Error.Details: status, retries, maxRetries, timeoutAt,
// nextRetryAt, recoverable, and accepted, the replay commands the record
// would take now, e.g. [force_prepare_compensation]); for a refused value,
// field names it.
func commandError(id string, err error) *apiError {
	var ae *aggregate.Error
	switch {
	case errors.Is(err, aggregate.ErrNotFound):
		return notFound(id)
	case errors.As(err, &ae) && (errors.Is(err, aggregate.ErrIllegalState) || errors.Is(err, aggregate.ErrStaleAttempt) || errors.Is(err, aggregate.ErrAlreadyRecorded)):
		return &apiError{status: http.StatusConflict, body: api.Error{Code: ae.Code(), Message: ae.Message, Details: refusalDetails(id, ae)}}
	case errors.As(err, &ae):
		code := ae.Code()
		if errors.Is(err, aggregate.ErrArithmetic) {
			// Wow's code of an ArithmeticException is "BadRequest", which
			// would contradict the status.
			code = aggregate.ErrIllegalArgument.Error()
		}
		d := refusalDetails(id, ae)
		if ae.Field != "" {
			d["field"] = ae.Field
		}
		return &apiError{status: http.StatusUnprocessableEntity, body: api.Error{Code: code, Message: ae.Message, Details: d}}
	case errors.Is(err, eventstore.ErrConflict):
		return &apiError{status: http.StatusConflict, body: api.Error{Code: "Conflict", Message: "the record changed while the command ran, more often than the server retries; send the command again", Details: map[string]any{"id": id}}}
	}
	return nil
}

// refusalDetails are the details of a refused command: the id and the
// aggregate's facts about the record.
func refusalDetails(id string, ae *aggregate.Error) map[string]any {
	d := map[string]any{"id": id}
	for k, v := range ae.Details() {
		d[k] = v
	}
	return d
}

// queryError maps an error of the projection.
func queryError(id string, err error) *apiError {
	var qe *index.QueryError
	var inc *fanout.Incomplete
	switch {
	case errors.As(err, &inc):
		// Asked across instances, some partitions did not answer: no
		// answer, rather than a short one.
		return &apiError{status: http.StatusServiceUnavailable, body: api.Error{Code: "PartitionsMissing",
			Message: "some instances did not answer for their records; send the request again later: " + inc.Error(),
			Details: map[string]any{"missing": inc.Missing, "unanswered": inc.Unanswered}}}
	case errors.Is(err, projection.ErrNotFound):
		return notFound(id)
	case errors.As(err, &qe):
		return badRequest(qe.Field, "%s", qe.Reason)
	case errors.Is(err, projection.ErrInvalidQuery):
		return badRequest("query", "%s", strings.TrimSuffix(err.Error(), ": "+projection.ErrInvalidQuery.Error()))
	}
	return nil
}

// unavailable reports whether err means NATS cannot be reached now: the
// documented 503.
func unavailable(err error) bool {
	for _, target := range []error{
		nats.ErrConnectionClosed, nats.ErrConnectionDraining, nats.ErrDisconnected, nats.ErrNoServers,
		nats.ErrTimeout, nats.ErrNoResponders, jetstream.ErrNoStreamResponse, jetstream.ErrJetStreamNotEnabled,
		context.DeadlineExceeded,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// writeError writes err as JSON. An error that is not an *apiError is an
// internal error: logged, and reported without its text.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) && unavailable(err) && r.Context().Err() == nil {
		s.log.Warn("request failed: NATS unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &apiError{status: http.StatusServiceUnavailable, body: api.Error{Code: "Unavailable", Message: "the server cannot reach NATS now; send the request again later"}}
	}
	if ae == nil {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = &apiError{status: http.StatusInternalServerError, body: api.Error{Code: "Internal", Message: "internal error; the server log has the details"}}
	}
	writeJSON(w, ae.status, ae.body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		slog.Debug("write response", "err", err)
	}
}
