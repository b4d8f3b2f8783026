package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/amends-dev/amends/aggregate"
)

// OperatorCommands are the commands the API accepts, by wire name. Create
// and the execution results come from services' recorders, not operators.
var OperatorCommands = []string{
	aggregate.NamePrepareCompensation,
	aggregate.NameForcePrepareCompensation,
	aggregate.NameApplyRetrySpec,
	aggregate.NameMarkRecoverable,
	aggregate.NameChangeFunction,
}

// reasonRequired lists the commands that need a reason in the audit trail.
var reasonRequired = []string{aggregate.NameForcePrepareCompensation, aggregate.NameChangeFunction}

// MaxBodyBytes bounds request bodies.
const MaxBodyBytes = 64 << 10

// MaxReasonLength bounds an audit reason.
const MaxReasonLength = 1024

// CommandResponse is the body of a successful command.
type CommandResponse struct {
	ID        string          `json:"id"`
	State     aggregate.State `json:"state"`
	Version   uint64          `json:"version"`
	Events    []HistoryEvent  `json:"events"`
	Duplicate bool            `json:"duplicate"`
}

func (s *Server) command(w http.ResponseWriter, r *http.Request, p principal) error {
	id, name := r.PathValue("id"), r.PathValue("command")
	if !slices.Contains(OperatorCommands, name) {
		return &apiError{status: http.StatusNotFound, body: Error{Code: "NotFound",
			Message: "unknown command " + name + "; the commands are " + strings.Join(OperatorCommands, ", ")}}
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	reason, err := readReason(name, body)
	if err != nil {
		return err
	}
	cmd, err := aggregate.DecodeCommand(name, body)
	if err != nil {
		return badRequest("", "%v", err)
	}
	meta := aggregate.Meta{
		CommandID: r.Header.Get("Idempotency-Key"),
		RequestID: r.Header.Get("X-Request-Id"),
		TraceID:   r.Header.Get("Traceparent"),
		Actor:     p.name,
		Reason:    reason,
	}
	res, err := s.cfg.Commands.Execute(r.Context(), id, cmd, meta)
	if err != nil {
		if ae := commandError(id, err); ae != nil {
			return ae
		}
		return err
	}
	s.awaitIndex(r.Context(), id, res.Version)
	out := CommandResponse{ID: id, State: res.State, Version: res.Version, Duplicate: res.Duplicate, Events: []HistoryEvent{}}
	for i, e := range res.Events {
		n, b, err := aggregate.EncodeEvent(e)
		if err != nil {
			return err
		}
		out.Events = append(out.Events, HistoryEvent{ID: res.Stream.Events[i].ID, Name: n, Body: b})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// awaitIndex waits briefly until the index shows version, so that a list
// right after a command shows its effect.
func (s *Server) awaitIndex(ctx context.Context, id string, version uint64) {
	if s.cfg.ReadYourWrites < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ReadYourWrites)
	defer cancel()
	if err := s.cfg.Queries.WaitFor(ctx, id, version); err != nil {
		s.log.Debug("index lags behind a command", "id", id, "version", version, "err", err)
	}
}

// readBody reads a JSON body of at most MaxBodyBytes; an empty body is {}.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, body: Error{Code: "PayloadTooLarge",
			Message: "the request body is over the limit of 64 KiB"}}
	}
	if err != nil {
		return nil, badRequest("", "read the request body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	return body, nil
}

// readReason takes the audit reason from the body's "reason" field.
func readReason(command string, body []byte) (string, error) {
	var fields struct {
		Reason *string `json:"reason"`
	}
	if err := json.Unmarshal(body, &fields); err != nil {
		return "", badRequest("", "the body of %s must be a JSON object: %v", command, err)
	}
	reason := ""
	if fields.Reason != nil {
		reason = strings.TrimSpace(*fields.Reason)
	}
	if reason == "" && slices.Contains(reasonRequired, command) {
		return "", badRequest("reason", "%s needs a reason for the audit trail: add \"reason\": \"...\" to the body (amends --reason)", command)
	}
	if len(reason) > MaxReasonLength {
		return "", badRequest("reason", "reason is %d bytes, over the limit of %d", len(reason), MaxReasonLength)
	}
	if strings.ContainsFunc(reason, func(r rune) bool { return r < 0x20 && r != '\t' }) {
		return "", badRequest("reason", "reason must be one line without control characters")
	}
	return reason, nil
}
