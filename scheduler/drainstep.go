// One step of a function's drain: start, advance, halve, end.

package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/rollout"
)

// drainOne carries out what the incident's decider (circuit.DecideDrain)
// decides for c's function at now: store the drain, probe the circuit,
// or advance the drain's rollout by one tick.
func (s *Scheduler) drainOne(ctx context.Context, c circuit.State, now time.Time) error {
	d, stored := s.drainOf(c.Function)
	records := s.opts.drain.Records
	d, dec := circuit.DecideDrain(c, d, stored, now, s.opts.drain.policy(), func(batch []rollout.Record) (ok, failed []string) {
		_, ok, failed = outcomes(records, batch, now, false) // a step given up: what settled of it counts
		return ok, failed
	})
	fn := c.Function.String()
	switch dec.Change {
	case circuit.DrainHeld:
		s.opts.logger.Info("scheduler: a circuit opened; its function's records wait for the recovery drain", "function", fn)
	case circuit.DrainReopened:
		s.opts.logger.Warn("scheduler: a circuit opened again during its recovery drain; the drain waits", "function", fn,
			"released", d.Released, "succeeded", d.Succeeded, "failed", d.Failed)
	case circuit.DrainStarted:
		s.drainStats.started.Add(1)
		s.opts.logger.Info("scheduler: the circuit closed; draining its function's records of the incident, a canary first", "function", fn,
			"from", time.UnixMilli(d.From).UTC(), "to", time.UnixMilli(d.To).UTC(), "rate", d.Rate)
	}
	if dec.Change != circuit.DrainUnchanged {
		if err := s.putDrain(ctx, d, now); err != nil {
			return err
		}
	}
	switch {
	case dec.Probe:
		return s.probe(ctx, c, d, now)
	case dec.Roll:
		return s.advanceDrain(ctx, d, now)
	}
	return nil
}

// advanceDrain judges d's step under way, or prepares the next one, or
// ends d when no record is left.
func (s *Scheduler) advanceDrain(ctx context.Context, d circuit.Drain, now time.Time) error {
	dc := s.opts.drain
	pol := dc.policy()
	if len(d.Batch) > 0 {
		pending, ok, failed := settleBatch(dc.Records, d.Batch, now)
		if pending {
			return nil
		}
		d, v := d.Settled(pol, ok, failed, now)
		s.drainStats.steps.Add(1)
		switch v.Kind {
		case rollout.Halved:
			s.drainStats.halved.Add(1)
			s.opts.logger.Warn("scheduler: a drain step failed; halving the drain", "function", d.Function.String(), "succeeded", v.Good, "of", v.Judged,
				"size", d.Size, "rate", d.Rate)
		case rollout.Retry:
			// A canary that fails does not open the circuit: a record may
			// fail for its own reason, and the circuit counts the fresh
			// calls of the replays itself.
			s.drainStats.canaryFailed.Add(1)
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
		d = d.Finished(now)
		s.drainStats.done.Add(1)
		s.opts.logger.Info("scheduler: recovery drain done", "function", d.Function.String(), "released", d.Released, "succeeded", d.Succeeded,
			"failed", d.Failed, "steps", d.Judged, "took", time.Duration(d.DoneAt-d.StartedAt)*time.Millisecond)
		return s.putDrain(ctx, d, now)
	}
	label := d.Label()
	batch, perr := s.prepareAll(ctx, items, prepareOrForce, func(it api.Item) aggregate.Meta {
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
