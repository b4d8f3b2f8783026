package dashboard

import (
	"fmt"
	"net/http"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
)

// Action is one operator command as the record page offers it.
type Action struct {
	// Name is the command's wire name (api.OperatorCommands).
	Name api.Command `json:"name"`
	// Accepted reports whether the aggregate accepts the command on the
	// record now (asked of aggregate.Decide, not copied from it).
	Accepted bool `json:"accepted"`
	// Why says, for a command not accepted, why not and what would make
	// it so; for an accepted one, anything to know before sending it.
	Why string `json:"why,omitempty"`
	// From is the instant (epoch ms) from which the passage of time alone
	// makes a refused command accepted, such as a force-prepare once the
	// running attempt times out; 0 if time alone does not.
	From int64 `json:"from,omitempty"`
}

// Actions is the body of GET /ui/v1/records/{id}/actions: the operator
// commands on the record at At, for its state at Version.
type Actions struct {
	ID      string           `json:"id"`
	Version uint64           `json:"version"`
	At      int64            `json:"at"`
	Status  aggregate.Status `json:"status"`
	Actions []Action         `json:"actions"`
}

// RecordActions returns what each operator command would do on s at now:
// the replay commands are decided with aggregate.Decide on s as it is; the
// settings commands (retry spec, recoverability, function), which the
// aggregate accepts in every status, are listed as accepted with a note on
// a finished record. It is pure.
func RecordActions(s aggregate.State, now time.Time) []Action {
	out := make([]Action, 0, len(api.OperatorCommands))
	for _, name := range api.OperatorCommands {
		a := Action{Name: name}
		switch name {
		case api.CommandPrepare, api.CommandForcePrepare:
			var c aggregate.Command = aggregate.PrepareCompensation{}
			if name == api.CommandForcePrepare {
				c = aggregate.ForcePrepareCompensation{}
			}
			_, err := aggregate.Decide(s, c, now)
			a.Accepted = err == nil
			a.Why, a.From = replayWhy(&s, name, a.Accepted, now)
		default:
			a.Accepted = true
			if s.Status == aggregate.StatusSucceeded {
				a.Why = "the record has succeeded: a change takes effect only if it is recorded as failing again"
			}
		}
		out = append(out, a)
	}
	return out
}

// replayWhy explains the decision on a replay command: why it is refused
// and when time alone would change that, or what an accepted one does.
func replayWhy(s *aggregate.State, name api.Command, accepted bool, now time.Time) (string, int64) {
	force := name == api.CommandForcePrepare
	limit := fmt.Sprintf("%d of %d retries used", s.RetryState.Retries, s.RetrySpec.MaxRetries)
	if accepted {
		switch {
		case force && s.IsBelowRetryThreshold():
			return "replays now, as Prepare does, and counts as a retry (" + limit + ")", 0
		case force:
			return "replays now beyond the retry limit (" + limit + "); it needs a reason", 0
		case !s.Recoverable.AutoRetried():
			return "replays now; the scheduler does not retry this " + string(s.Recoverable) + " record by itself", 0
		}
		return "replays now, within the retry limit (" + limit + ")", 0
	}
	switch {
	case s.Status == aggregate.StatusSucceeded:
		return "the record has succeeded: there is nothing to replay", 0
	case s.Status == aggregate.StatusPrepared && !s.Timeout(now):
		from := s.RetryState.TimeoutAt + 1
		if !force && !s.IsBelowRetryThreshold() {
			return fmt.Sprintf("a replay is running (attempt %d) and every retry is used (%s); Force-prepare is offered once it times out", s.RetryState.Retries, limit), 0
		}
		return fmt.Sprintf("a replay is running (attempt %d): offered once it times out", s.RetryState.Retries), from
	case !force && !s.IsBelowRetryThreshold():
		return "every retry is used (" + limit + "): Force-prepare replays beyond the limit, or a larger maxRetries lets Prepare and the scheduler go on", 0
	}
	return "the record is " + string(s.Status), 0
}

func (d *Dashboard) actions(w http.ResponseWriter, r *http.Request) {
	v, ok := d.record(w, r)
	if !ok {
		return
	}
	now := d.cfg.Clock.Now()
	writeJSON(w, http.StatusOK, Actions{ID: v.State.ID, Version: v.Version, At: now.UnixMilli(), Status: v.State.Status, Actions: RecordActions(v.State, now)})
}
