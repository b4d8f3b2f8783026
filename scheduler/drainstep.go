// One step of a function's drain: start, advance, halve, end.

package scheduler

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/projection"
)

// drainOne moves the drain of c's function on by one tick at most.
func (s *Scheduler) drainOne(ctx context.Context, c circuit.State, now time.Time) error {
	d, ok := s.drainOf(c.Function)
	ms := now.UnixMilli()
	if c.Phase != circuit.Closed {
		switch {
		case !ok || d.Phase == DrainDone:
			d = Drain{Function: c.Function, Phase: DrainWaiting, From: incidentFrom(c, ms), Probes: d.Probes,
				Note: fmt.Sprintf("the circuit opened at %s; its records wait for it to close", stamp(c.Since))}
			s.opts.logger.Info("scheduler: a circuit opened; its function's records wait for the recovery drain", "function", c.Function.String())
			if err := s.putDrain(ctx, d, now); err != nil {
				return err
			}
		case d.Phase == DrainCanary || d.Phase == DrainSteps:
			s.judgeAborted(&d, now)
			d.Phase, d.To, d.Batch, d.NextAt = DrainWaiting, 0, nil, 0
			d.Note = fmt.Sprintf("the circuit opened again at %s while draining; waiting for it to close", stamp(c.Since))
			s.opts.logger.Warn("scheduler: a circuit opened again during its recovery drain; the drain waits", "function", c.Function.String(),
				"released", d.Released, "succeeded", d.Succeeded, "failed", d.Failed)
			if err := s.putDrain(ctx, d, now); err != nil {
				return err
			}
		case c.Incident.From != 0 && c.Incident.From < d.From:
			d.From = c.Incident.From
			if err := s.putDrain(ctx, d, now); err != nil {
				return err
			}
		}
		return s.probe(ctx, c, d, now)
	}
	if c.Incident.To == 0 {
		return nil // never had an incident
	}
	switch {
	case !ok, d.Phase == DrainWaiting, d.Phase == DrainDone && c.Incident.To > d.To:
		from := c.Incident.From
		if ok && d.Phase == DrainWaiting && d.From != 0 {
			from = min(from, d.From)
		}
		d = Drain{Function: c.Function, Phase: DrainCanary, From: from, To: c.Incident.To, StartedAt: ms,
			Size: s.opts.drain.Policy.Canary, Rate: s.opts.drain.Policy.Rate, Probes: d.Probes,
			Note: fmt.Sprintf("the circuit closed at %s; draining the records of %s to %s, a canary first", stamp(c.Incident.To), stamp(from), stamp(c.Incident.To))}
		s.drainStats.started.Add(1)
		s.opts.logger.Info("scheduler: the circuit closed; draining its function's records of the incident, a canary first", "function", c.Function.String(),
			"from", time.UnixMilli(from).UTC(), "to", time.UnixMilli(c.Incident.To).UTC(), "rate", d.Rate)
		if err := s.putDrain(ctx, d, now); err != nil {
			return err
		}
	case d.Phase == DrainDone:
		return nil
	case c.Incident.To > d.To:
		d.From, d.To = min(d.From, c.Incident.From), c.Incident.To // a replay reported a later incident while draining
	}
	return s.advanceDrain(ctx, d, now)
}

func incidentFrom(c circuit.State, ms int64) int64 {
	if c.Incident.From != 0 {
		return c.Incident.From
	}
	return ms
}

// judgeAborted counts the records of d's batch that have an outcome, the
// batch being given up.
func (s *Scheduler) judgeAborted(d *Drain, now time.Time) {
	for _, r := range d.Batch {
		switch outcome(s.opts.drain.Records, r, now) {
		case outcomeSucceeded:
			d.Released++
			d.Succeeded++
		case outcomeFailed:
			d.Released++
			d.Failed++
		}
	}
}

// advanceDrain judges d's step under way, or prepares the next one, or
// ends d when no record is left.
func (s *Scheduler) advanceDrain(ctx context.Context, d Drain, now time.Time) error {
	dc := s.opts.drain
	pol := dc.Policy
	ms := now.UnixMilli()
	if len(d.Batch) > 0 {
		pending, ok, failed := settleBatch(dc.Records, d.Batch, now)
		if pending {
			return nil
		}
		n := len(d.Batch)
		d.Released += n
		d.Succeeded += len(ok)
		d.Failed += len(failed)
		d.Steps++
		judged, good := judge(d.Batch, ok)
		d.Batch = nil
		s.drainStats.steps.Add(1)
		ratio := 1.0
		if judged > 0 {
			ratio = float64(good) / float64(judged)
		}
		what := "canary"
		if d.Phase == DrainSteps {
			what = fmt.Sprintf("step %d", d.Steps)
		}
		switch {
		case ratio >= pol.Threshold:
			// A good step wins back what a bad one halved: the rate
			// doubles up to the policy's, and the step with it.
			d.Phase = DrainSteps
			d.Rate = min(2*d.Rate, pol.Rate)
			d.Size = min(2*d.Size, maxStep(d.Rate))
			d.Note = fmt.Sprintf("the %s succeeded for %d of %d records (%d of %d refused by the circuit); the next step prepares %d", what, len(ok), n, good, judged, d.Size)
		case d.Size > pol.Canary:
			d.Size = max(pol.Canary, d.Size/2)
			d.Rate = max(minDrainRate, d.Rate/2)
			s.drainStats.halved.Add(1)
			d.Note = fmt.Sprintf("the %s succeeded for %d of %d records refused by the circuit (%.0f%%), below %.0f%%; halved to %d records, %.0f records/s",
				what, good, judged, 100*ratio, 100*pol.Threshold, d.Size, d.Rate)
			s.opts.logger.Warn("scheduler: a drain step failed; halving the drain", "function", d.Function.String(), "succeeded", good, "of", judged,
				"size", d.Size, "rate", d.Rate)
		default:
			// A canary that fails does not open the circuit: a record may
			// fail for its own reason, and the circuit counts the fresh
			// calls of the replays itself. The drain waits a cool-down and
			// tries the next record.
			wait := dc.CircuitPolicy.CoolDown
			if wait <= 0 {
				wait = circuit.DefaultCoolDown
			}
			d.NextAt = ms + wait.Milliseconds()
			s.drainStats.canaryFailed.Add(1)
			d.Note = fmt.Sprintf("the recovery drain's %s succeeded for %d of %d records refused by the circuit (%.0f%%), below %.0f%%; the next canary in %s",
				what, good, judged, 100*ratio, 100*pol.Threshold, wait)
			s.opts.logger.Warn("scheduler: the drain's canary failed; trying the next record after a cool-down", "function", d.Function.String(),
				"failed", failed, "wait", wait)
		}
		return s.putDrain(ctx, d, now)
	}
	if ms < d.NextAt {
		return nil
	}
	size := d.Size
	if dc.Capacity != nil {
		room, err := dc.Capacity(ctx, d.Function.Context)
		if err != nil || room < 1 {
			// No room in the replay consumer (or none runs): the next tick
			// asks again; the note says why the drain waits.
			note := "waiting for room in the replay consumer of context " + d.Function.Context
			if err != nil {
				note += ": " + err.Error()
			}
			if note = clipNote(note); d.Note != note {
				d.Note = note
				return s.putDrain(ctx, d, now)
			}
			return nil
		}
		size = min(size, room)
	}
	items, err := s.drainRecords(d, size)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		d.Phase, d.DoneAt, d.Size, d.NextAt = DrainDone, ms, 0, 0
		d.Note = fmt.Sprintf("drained: %d records released, %d succeeded, %d failed", d.Released, d.Succeeded, d.Failed)
		s.drainStats.done.Add(1)
		s.opts.logger.Info("scheduler: recovery drain done", "function", d.Function.String(), "released", d.Released, "succeeded", d.Succeeded,
			"failed", d.Failed, "steps", d.Steps, "took", time.Duration(ms-d.StartedAt)*time.Millisecond)
		return s.putDrain(ctx, d, now)
	}
	label := "canary"
	if d.Phase == DrainSteps {
		label = fmt.Sprintf("step %d", d.Steps+1)
	}
	batch, perr := s.prepareAll(ctx, items, prepareOrForce, func(it projection.Item) aggregate.Meta {
		return aggregate.Meta{Actor: Actor, Reason: fmt.Sprintf("recovery drain of %s after the outage of %s to %s: %s", d.Function, stamp(d.From), stamp(d.To), label),
			CommandID: fmt.Sprintf("drain:%s:%d:%d", it.ID, it.Retries, d.StartedAt)}
	})
	s.drainStats.prepared.Add(uint64(len(batch)))
	if len(batch) == 0 {
		return perr // every pick moved on (the next tick picks again), or none could be sent
	}
	d.Batch, d.BatchAt = batch, ms
	d.NextAt = ms + int64(math.Ceil(float64(len(batch))/d.Rate*1000))
	if err := s.putDrain(ctx, d, now); err != nil {
		return err
	}
	return perr
}

// judge counts the records of batch that judge its step, those the
// circuit had refused (their replay is the first call of their event),
// and how many of them are among ok, the records that succeeded.
func judge(batch []ReleasedRecord, ok []string) (judged, good int) {
	for _, r := range batch {
		if !r.Refused {
			continue
		}
		judged++
		if slices.Contains(ok, r.ID) {
			good++
		}
	}
	return judged, good
}

// maxStep is the largest step at rate: a second's worth, at most
// MaxReleaseBatch.
func maxStep(rate float64) int {
	return max(1, min(MaxReleaseBatch, int(math.Ceil(rate))))
}
