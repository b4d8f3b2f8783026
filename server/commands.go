package server

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// OperatorCommands are the commands the API accepts, by wire name. Create
// and the execution results come from services' recorders, not operators.
var OperatorCommands = commandNames(api.OperatorCommands)

// commandNames returns the wire names of commands.
func commandNames(commands []api.Command) []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = string(c)
	}
	return names
}

func (s *Server) command(w http.ResponseWriter, r *http.Request, p principal) error {
	return s.runCommand(w, r, p, r.PathValue("command"))
}

// commandFor is the handler of one operator command, for a route whose
// path names the command.
func (s *Server) commandFor(name string) func(http.ResponseWriter, *http.Request, principal) error {
	return func(w http.ResponseWriter, r *http.Request, p principal) error { return s.runCommand(w, r, p, name) }
}

// runCommand runs operator command name on the path's record. Everything
// the request carries (id, body, headers) is checked before the command
// reaches NATS. An Idempotency-Key is bound to the first request that used
// it (command, record and body; see claimKey): the same request again
// answers duplicate:true, another request with the key 422.
func (s *Server) runCommand(w http.ResponseWriter, r *http.Request, p principal, name string) error {
	if !slices.Contains(OperatorCommands, name) {
		return &apiError{status: http.StatusNotFound, body: api.Error{Code: "NotFound",
			Message: "unknown command " + quote(name) + "; the commands are " + strings.Join(OperatorCommands, ", "), Details: map[string]any{"field": "command"}}}
	}
	if err := noQuery(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	cmd, reason, probe, err := decodeCommandRequest(name, body)
	if err != nil {
		return err
	}
	meta, err := commandMeta(r, p, reason)
	if err != nil {
		return err
	}
	if name == aggregate.NamePrepareCompensation || name == aggregate.NameForcePrepareCompensation {
		if err := s.guardPrepare(r.Context(), id, probe, meta.Actor); err != nil {
			return err
		}
	}
	release, err := s.claimKey(r.Context(), meta.CommandID, commandHash(name, id, body))
	if err != nil {
		return err
	}
	res, err := s.cfg.Commands.Execute(r.Context(), id, cmd, meta)
	release(err)
	if err != nil {
		if ae := commandError(id, err); ae != nil {
			return ae
		}
		return err
	}
	s.awaitIndex(r.Context(), id, res.Version)
	out := api.CommandResponse{ID: id, State: res.State, Version: res.Version, Duplicate: res.Duplicate, Events: []api.HistoryEvent{}}
	for i, e := range res.Events {
		n, b, err := aggregate.EncodeEvent(e)
		if err != nil {
			return err
		}
		out.Events = append(out.Events, api.HistoryEvent{ID: res.Stream.Events[i].ID, Name: n, Body: b})
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
