package circuit

import (
	"fmt"
	"time"

	"github.com/amends-dev/amends/rollout"
)

// The phases of a recovery drain.
const (
	// DrainWaiting: the function's circuit is open; its records wait (the
	// passes leave them alone) and the drain prepares the probe's replay
	// when no live event comes to probe.
	DrainWaiting = "waiting"
	// DrainCanary and DrainSteps: the circuit closed; the incident's
	// records are being prepared, a canary, then steps (a rollout under
	// the rollout.Adaptive policy).
	DrainCanary = rollout.PhaseCanary
	DrainSteps  = rollout.PhaseSteps
	// DrainDone: no record of the incident is left to prepare.
	DrainDone = rollout.PhaseDone
)

// Drain is the progress of the recovery drain of one function's records,
// as the drains bucket keeps it (one key per function), so that it
// survives a restart: the incident it drains, the probes it prepared
// while the circuit was open, and the rollout's progress. Times are
// epoch ms.
type Drain struct {
	Function Function `json:"function"`
	// From and To are the incident drained: the records of the function
	// that failed within it, or whose errorCode is CircuitOpen, and that
	// have an automatic retry left. To is 0 while waiting.
	From int64 `json:"from"`
	To   int64 `json:"to,omitempty"`
	// Probe is the replay last prepared as the circuit's probe, at
	// ProbeAt; Probes counts them.
	Probe   *rollout.Record `json:"probe,omitempty"`
	ProbeAt int64           `json:"probeAt,omitempty"`
	Probes  int             `json:"probes"`
	// Progress is the rollout's: phase (DrainWaiting before it starts),
	// StartedAt when the circuit closed, the step under way and the
	// counts.
	rollout.Progress
}

// Draining reports whether the drain holds its function's records from
// the scheduler's passes: while it waits or drains.
func (d Drain) Draining() bool { return d.Phase != DrainDone }

// DrainChange is what DecideDrain changed in a drain.
type DrainChange int

// The changes DecideDrain makes.
const (
	// DrainUnchanged: nothing to store.
	DrainUnchanged DrainChange = iota
	// DrainHeld: the circuit opened; a new drain waits for it to close.
	DrainHeld
	// DrainReopened: the circuit opened again while draining; the step
	// under way is given up (what settled of it counted) and the drain
	// waits.
	DrainReopened
	// DrainWidened: the incident began earlier, or ended later, than the
	// drain's window; the window grows.
	DrainWidened
	// DrainStarted: the circuit closed; the rollout of the incident's
	// records begins with its canary.
	DrainStarted
)

// DrainDecision is what the scheduler does for a function's incident
// after DecideDrain: store the drain when Change is not DrainUnchanged;
// then, when Probe, probe the circuit if no call did (ProbeDue); when
// Roll, advance the drain's rollout.
type DrainDecision struct {
	Change DrainChange
	Probe  bool
	Roll   bool
}

// DecideDrain is the incident's decider: given c, the circuit of a
// function, and d, its drain as stored (stored false if it has none),
// it returns the drain after seeing c at now and what to do. While c is
// not closed its records wait (a drain that ran is given up: settled
// tells which records of its batch have an outcome); once it closes
// after an incident the records of [Incident.From, Incident.To] are
// drained by a rollout of pol, from its canary; a later incident starts
// the drain again. It is pure: the same arguments give the same result.
func DecideDrain(c State, d Drain, stored bool, now time.Time, pol rollout.Policy, settled func([]rollout.Record) (ok, failed []string)) (Drain, DrainDecision) {
	ms := now.UnixMilli()
	if c.Phase != Closed {
		dec := DrainDecision{Probe: true}
		switch {
		case !stored || d.Phase == DrainDone:
			from := c.Incident.From
			if from == 0 {
				from = ms
			}
			d = Drain{Function: c.Function, From: from, Probes: d.Probes, Progress: rollout.Progress{Phase: DrainWaiting, UpdatedAt: ms,
				Note: fmt.Sprintf("the circuit opened at %s; its records wait for it to close", stamp(c.Since))}}
			dec.Change = DrainHeld
		case d.Running():
			ok, failed := settled(d.Batch)
			d.Progress = d.Aborted(ok, failed, now)
			d.Phase, d.To = DrainWaiting, 0
			d.Note = fmt.Sprintf("the circuit opened again at %s while draining; waiting for it to close", stamp(c.Since))
			dec.Change = DrainReopened
		case c.Incident.From != 0 && c.Incident.From < d.From:
			d.From = c.Incident.From
			dec.Change = DrainWidened
		}
		return d, dec
	}
	if c.Incident.To == 0 {
		return d, DrainDecision{} // never had an incident
	}
	switch {
	case !stored, d.Phase == DrainWaiting, d.Phase == DrainDone && c.Incident.To > d.To:
		from := c.Incident.From
		if stored && d.Phase == DrainWaiting && d.From != 0 {
			from = min(from, d.From)
		}
		d = Drain{Function: c.Function, From: from, To: c.Incident.To, Probes: d.Probes, Progress: rollout.Start(pol, now)}
		d.Note = fmt.Sprintf("the circuit closed at %s; draining the records of %s to %s, a canary first", stamp(c.Incident.To), stamp(from), stamp(c.Incident.To))
		return d, DrainDecision{Change: DrainStarted, Roll: true}
	case d.Phase == DrainDone:
		return d, DrainDecision{}
	case c.Incident.To > d.To:
		// a replay reported a later incident while draining
		d.From, d.To = min(d.From, c.Incident.From), c.Incident.To
		return d, DrainDecision{Change: DrainWidened, Roll: true}
	}
	return d, DrainDecision{Roll: true}
}

// Settled returns d after its step under way settled at now (ok the
// records that succeeded, failed the others), with the rollout's verdict
// and a note that says it.
func (d Drain) Settled(pol rollout.Policy, ok, failed []string, now time.Time) (Drain, rollout.Verdict) {
	var v rollout.Verdict
	d.Progress, v = d.Progress.Settled(pol, ok, failed, now)
	switch v.Kind {
	case rollout.Grew:
		d.Note = fmt.Sprintf("the %s succeeded for %d of %d records (%d of %d refused by the circuit); the next step prepares %d", v.What, len(ok), v.Released, v.Good, v.Judged, d.Size)
	case rollout.Halved:
		d.Note = fmt.Sprintf("the %s succeeded for %d of %d records refused by the circuit (%.0f%%), below %.0f%%; halved to %d records, %.0f records/s",
			v.What, v.Good, v.Judged, 100*v.Ratio, 100*v.Threshold, d.Size, d.Rate)
	case rollout.Retry:
		d.Note = fmt.Sprintf("the recovery drain's %s succeeded for %d of %d records refused by the circuit (%.0f%%), below %.0f%%; the next canary in %s",
			v.What, v.Good, v.Judged, 100*v.Ratio, 100*v.Threshold, v.Wait)
	}
	return d, v
}

// Finished returns d drained at now, its note the totals.
func (d Drain) Finished(now time.Time) Drain {
	d.Progress = d.Progress.Finished(now)
	d.Note = fmt.Sprintf("drained: %d records released, %d succeeded, %d failed", d.Released, d.Succeeded, d.Failed)
	return d
}

// ProbeDue reports whether the scheduler should replay a record as the
// probe of c, whose drain is d, at now: the cool-down passed grace ago
// (or, half-open, the probe is free) and no call claimed the probe; the
// circuit was not opened by an operator; the last probe the drain
// prepared failed no sooner than grace ago and has an outcome
// (lastPending false).
func (d Drain) ProbeDue(c State, now time.Time, grace time.Duration, lastPending bool) bool {
	ms, g := now.UnixMilli(), grace.Milliseconds()
	switch {
	case c.Forced, c.Phase == Closed:
		return false
	case c.Phase == Open && ms < c.Until+g:
		return false
	case c.Phase == HalfOpen && !c.Probeable(now):
		return false
	case c.Phase == Open && d.ProbeAt != 0 && ms < d.ProbeAt+g:
		return false // the last probe failed a moment ago: the circuit's cool-down paces the next
	case d.Probe != nil && lastPending:
		return false
	}
	return true
}

// Probed returns d after the scheduler prepared r as the circuit's probe
// at now.
func (d Drain) Probed(r rollout.Record, now time.Time) Drain {
	d.Probe, d.ProbeAt = &r, now.UnixMilli()
	d.Probes++
	return d
}

func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
