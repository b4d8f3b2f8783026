// One step of a function's drain: start, advance, halve, end.

package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/rollout"
)

// drainOne moves the drain of c's function on by one tick at most.
func (s *Scheduler) drainOne(ctx context.Context, c circuit.State, now time.Time) error {
	d, ok := s.drainOf(c.Function)
	ms := now.UnixMilli()
	if c.Phase != circuit.Closed {
		switch {
		case !ok || d.Phase == DrainDone:
			d = Drain{Function: c.Function, From: incidentFrom(c, ms), Probes: d.Probes, Progress: rollout.Progress{Phase: DrainWaiting,
				Note: fmt.Sprintf("the circuit opened at %s; its records wait for it to close", stamp(c.Since))}}
			s.opts.logger.Info("scheduler: a circuit opened; its function's records wait for the recovery drain", "function", c.Function.String())
			if err := s.putDrain(ctx, d, now); err != nil {
				return err
			}
		case d.Running():
			_, ok, failed := settleBatch(s.opts.drain.Records, d.Batch, now)
			d.Progress = d.Aborted(ok, failed, now)
			d.Phase, d.To = DrainWaiting, 0
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
		d = Drain{Function: c.Function, From: from, To: c.Incident.To, Probes: d.Probes, Progress: rollout.Start(s.opts.drain.policy(), now)}
		d.Note = fmt.Sprintf("the circuit closed at %s; draining the records of %s to %s, a canary first", stamp(c.Incident.To), stamp(from), stamp(c.Incident.To))
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

// advanceDrain judges d's step under way, or prepares the next one, or
// ends d when no record is left.
func (s *Scheduler) advanceDrain(ctx context.Context, d Drain, now time.Time) error {
	dc := s.opts.drain
	pol := dc.policy()
	if len(d.Batch) > 0 {
		pending, ok, failed := settleBatch(dc.Records, d.Batch, now)
		if pending {
			return nil
		}
		var v rollout.Verdict
		d.Progress, v = d.Settled(pol, ok, failed, now)
		s.drainStats.steps.Add(1)
		switch v.Kind {
		case rollout.Grew:
			d.Note = fmt.Sprintf("the %s succeeded for %d of %d records (%d of %d refused by the circuit); the next step prepares %d", v.What, len(ok), v.Released, v.Good, v.Judged, d.Size)
		case rollout.Halved:
			s.drainStats.halved.Add(1)
			d.Note = fmt.Sprintf("the %s succeeded for %d of %d records refused by the circuit (%.0f%%), below %.0f%%; halved to %d records, %.0f records/s",
				v.What, v.Good, v.Judged, 100*v.Ratio, 100*v.Threshold, d.Size, d.Rate)
			s.opts.logger.Warn("scheduler: a drain step failed; halving the drain", "function", d.Function.String(), "succeeded", v.Good, "of", v.Judged,
				"size", d.Size, "rate", d.Rate)
		default:
			// A canary that fails does not open the circuit: a record may
			// fail for its own reason, and the circuit counts the fresh
			// calls of the replays itself. The drain waits a cool-down and
			// tries the next record.
			s.drainStats.canaryFailed.Add(1)
			d.Note = fmt.Sprintf("the recovery drain's %s succeeded for %d of %d records refused by the circuit (%.0f%%), below %.0f%%; the next canary in %s",
				v.What, v.Good, v.Judged, 100*v.Ratio, 100*v.Threshold, v.Wait)
			s.opts.logger.Warn("scheduler: the drain's canary failed; trying the next record after a cool-down", "function", d.Function.String(),
				"failed", failed, "wait", v.Wait)
		}
		return s.putDrain(ctx, d, now)
	}
	size, due := d.Next(pol, now)
	if !due {
		return nil
	}
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
		d.Progress = d.Finished(now)
		d.Note = fmt.Sprintf("drained: %d records released, %d succeeded, %d failed", d.Released, d.Succeeded, d.Failed)
		s.drainStats.done.Add(1)
		s.opts.logger.Info("scheduler: recovery drain done", "function", d.Function.String(), "released", d.Released, "succeeded", d.Succeeded,
			"failed", d.Failed, "steps", d.Judged, "took", time.Duration(d.DoneAt-d.StartedAt)*time.Millisecond)
		return s.putDrain(ctx, d, now)
	}
	label := d.Label()
	batch, perr := s.prepareAll(ctx, items, prepareOrForce, func(it projection.Item) aggregate.Meta {
		return aggregate.Meta{Actor: Actor, Reason: fmt.Sprintf("recovery drain of %s after the outage of %s to %s: %s", d.Function, stamp(d.From), stamp(d.To), label),
			CommandID: fmt.Sprintf("drain:%s:%d:%d", it.ID, it.Retries, d.StartedAt)}
	})
	s.drainStats.prepared.Add(uint64(len(batch)))
	if len(batch) == 0 {
		return perr // every pick moved on (the next tick picks again), or none could be sent
	}
	d.Progress = d.Launched(batch, now)
	if err := s.putDrain(ctx, d, now); err != nil {
		return err
	}
	return perr
}
