package dashboard

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/bounds"
)

// maxScheduleRows bounds the rows of a computed schedule; the rest are
// counted (Schedule.More).
const maxScheduleRows = 50

// Attempt is one retry of a computed schedule.
type Attempt struct {
	// Attempt is the retry count the prepare sets (1 = first retry).
	Attempt int32 `json:"attempt"`
	// At is the earliest the scheduler prepares it, epoch ms; TimeoutAt is
	// when that attempt times out.
	At        int64 `json:"at"`
	TimeoutAt int64 `json:"timeoutAt"`
}

// Schedule is the body of GET /ui/v1/records/{id}/schedule.
type Schedule struct {
	// Spec is the retry spec the schedule follows: the record's, or the
	// one the query proposes.
	Spec aggregate.RetrySpec `json:"spec"`
	// Proposed is true when Spec came from the query (a preview).
	Proposed bool `json:"proposed"`
	// Retries is the record's retry count now.
	Retries int32 `json:"retries"`
	// Attempts are the remaining automatic retries, earliest first,
	// assuming each fails at once; More counts those left out.
	Attempts []Attempt `json:"attempts"`
	More     int64     `json:"more,omitempty"`
	// Note explains an empty or cut schedule.
	Note string `json:"note,omitempty"`
}

// ComputeSchedule returns the remaining automatic retries of s under spec
// at now, with the aggregate's retry formula: the next retry is due at the
// record's nextRetryAt (applying a spec does not move it) or now if that
// has passed, and the prepare of retry k at t sets the next one to
// aggregate.NextRetryAt(minBackoff, k, t). It assumes every attempt fails
// at once and the scheduler prepares each as soon as it is due. It is pure.
func ComputeSchedule(s aggregate.State, spec aggregate.RetrySpec, now time.Time) Schedule {
	out := Schedule{Spec: spec, Retries: s.RetryState.Retries, Attempts: []Attempt{}}
	switch {
	case s.Status == aggregate.StatusSucceeded:
		out.Note = "the record has succeeded: nothing is left to retry"
		return out
	case !s.Recoverable.AutoRetried():
		out.Note = "the record is " + string(s.Recoverable) + ": the scheduler does not retry it; a force-prepare replays it"
		return out
	case s.RetryState.Retries >= spec.MaxRetries:
		out.Note = "no retries are left (" + strconv.Itoa(int(s.RetryState.Retries)) + " of " + strconv.Itoa(int(spec.MaxRetries)) +
			"); a force-prepare replays it, or a larger maxRetries lets the scheduler go on"
		return out
	}
	at := max(s.RetryState.NextRetryAt, now.UnixMilli())
	if s.Status == aggregate.StatusPrepared && !s.Timeout(now) {
		// The current attempt runs until it times out; the next is due no
		// earlier than its nextRetryAt.
		at = max(at, s.RetryState.TimeoutAt+1)
	}
	for k := s.RetryState.Retries + 1; k <= spec.MaxRetries; k++ {
		if len(out.Attempts) == maxScheduleRows {
			out.More = int64(spec.MaxRetries) - int64(k) + 1
			break
		}
		rs, err := aggregate.NextRetryState(spec, k, at)
		if err != nil {
			out.Note = "retry " + strconv.Itoa(int(k)) + " and later cannot be computed: " + errorMessage(err)
			out.More = int64(spec.MaxRetries) - int64(k) + 1
			break
		}
		out.Attempts = append(out.Attempts, Attempt{Attempt: k, At: at, TimeoutAt: rs.TimeoutAt})
		at = rs.NextRetryAt
	}
	return out
}

// errorMessage is an aggregate error's message without Go prefixes.
func errorMessage(err error) string {
	var ae *aggregate.Error
	if errors.As(err, &ae) {
		return ae.Message
	}
	return err.Error()
}

// schedule answers the record's schedule under its spec, or under the
// spec of the query's maxRetries, minBackoff and executionTimeout (a
// preview of apply-retry-spec; each missing one keeps the record's).
func (d *Dashboard) schedule(w http.ResponseWriter, r *http.Request) {
	if !checkQuery(w, r, "maxRetries", "minBackoff", "executionTimeout") {
		return
	}
	v, ok := d.record(w, r)
	if !ok {
		return
	}
	spec := v.State.RetrySpec
	q := r.URL.Query()
	proposed := false
	for _, p := range []struct {
		name string
		to   *int32
	}{{"maxRetries", &spec.MaxRetries}, {"minBackoff", &spec.MinBackoff}, {"executionTimeout", &spec.ExecutionTimeout}} {
		raw := q.Get(p.name)
		if raw == "" {
			continue
		}
		n, err := strconv.ParseInt(raw, 10, 32)
		if err != nil || !bounds.Within(n, 0, math.MaxInt32) {
			writeError(w, http.StatusBadRequest, "BadRequest", p.name+" must be a whole number from 0 to 2147483647, got "+strconv.Quote(clip(raw)), map[string]any{"field": p.name})
			return
		}
		*p.to, proposed = int32(n), true
	}
	if err := aggregate.ValidateRetrySpec(spec); err != nil {
		details := map[string]any{}
		var ae *aggregate.Error
		if errors.As(err, &ae) && ae.Field != "" {
			details["field"] = ae.Field
		}
		writeError(w, http.StatusUnprocessableEntity, "IllegalArgument", errorMessage(err), details)
		return
	}
	out := ComputeSchedule(v.State, spec, d.cfg.Clock.Now())
	out.Proposed = proposed
	writeJSON(w, http.StatusOK, out)
}
