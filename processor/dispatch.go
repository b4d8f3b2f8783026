package processor

import (
	"context"
	"log/slog"

	"github.com/cockroachdb/errors"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/quarantine"
)

// dispatch handles one message of group g's consumer: every event of the
// stream goes to every function of g that reacts to it, each failure is
// recorded, and the message is acked unless a recording failed.
func (p *Processor) dispatch(ctx context.Context, g *group, m jetstream.Msg) disposition {
	st, err := p.store.DecodeMsg(m)
	if err != nil {
		p.undecodable(&p.metrics.ConsumerMetrics, m, err)
		return p.quarantine(ctx, m, DurableName(p.context, g.name), quarantine.ReasonUndecodable, err)
	}
	fns := g.byType[st.Aggregate.Type]
	result := ack
	var steps []orderedStep
	if len(g.ordered) > 0 {
		if steps, result = p.orderedBegin(ctx, g, &st, m); result != ack {
			return result
		}
	}
	for i := range st.Events {
		e := &st.Events[i]
		for _, f := range fns {
			if !f.reacts(e.Name) {
				continue
			}
			d := &Delivery{Stream: &st, Event: e, Index: i, Function: f.info}
			if f.ordered {
				s := stepOf(steps, f)
				if s == nil || s.step == stepDone || !s.ok {
					continue // dispatched by an earlier delivery, or failed in this one
				}
				if !p.dispatchOrdered(ctx, f, d, s.entry.held) {
					if ctx.Err() != nil {
						return interrupted
					}
					s.ok, result = false, nak
				}
				continue
			}
			err := p.execute(ctx, f, d, true)
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return interrupted // stopped midway: neither record nor ack
			}
			if p.record(ctx, p.execution(f, d, nil, err)) == OutcomeRecordingFailed {
				result = nak
			}
		}
	}
	if len(steps) > 0 && !p.orderedEnd(ctx, steps, st.Version) {
		if ctx.Err() != nil {
			return interrupted
		}
		result = nak
	}
	return result
}

// dispatchOrdered is dispatch's step for an Ordered function: held events
// are added to the hold, others run, and a recorded failure starts a hold.
// It returns false when the message must be redelivered.
func (p *Processor) dispatchOrdered(ctx context.Context, f *function, d *Delivery, held bool) bool {
	g := p.gate(ctx, f, d, held)
	switch g {
	case gateHeld:
		return true
	case gateRetry:
		return false
	}
	err := p.execute(ctx, f, d, true)
	if err != nil && ctx.Err() != nil {
		return false
	}
	out := OutcomeNone
	if err != nil {
		out = p.record(ctx, p.execution(f, d, nil, err))
	}
	return p.afterOrdered(ctx, f, d, g, err, out) && out != OutcomeRecordingFailed
}

// execute runs f on d with immediate retries for RECOVERABLE errors (by the
// global classification, as the reference's retry filter does) and returns
// the final error. STATE_EVENT functions first get the aggregate's state;
// failing to build it is their failure.
func (p *Processor) execute(ctx context.Context, f *function, d *Delivery, cache bool) error {
	if d.started.IsZero() {
		d.started = p.o.clock.Now()
	}
	if f.info.FunctionKind == aggregate.KindStateEvent && d.State == nil {
		state, err := p.stateAfter(ctx, d.Stream, cache)
		if err != nil {
			f.stats.Failed.Add(1)
			return err
		}
		d.State = state
	}
	for attempt := 0; ; attempt++ {
		f.stats.Calls.Add(1)
		err := p.tracedCall(ctx, f, d)
		if err == nil {
			f.stats.Succeeded.Add(1)
			return nil
		}
		if attempt >= f.retry.Retries || ctx.Err() != nil || failure.Classify(err, failure.Rules{}) != aggregate.Recoverable {
			f.stats.Failed.Add(1)
			return err
		}
		f.stats.Retries.Add(1)
		delay := f.retry.Backoff.Delay(attempt)
		if p.o.logger.Enabled(ctx, slog.LevelDebug) {
			p.o.logger.Debug("amends processor: recoverable failure; retrying in process",
				"context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "event", d.Event.ID,
				"retry", attempt+1, "of", f.retry.Retries, "delay", delay, "err", err.Error())
		}
		if p.o.sleep(ctx, delay) != nil {
			f.stats.Failed.Add(1)
			return err
		}
	}
}

// call runs the handler, turning a panic into an error with its stack.
func call(ctx context.Context, f *function, d *Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.WithStackDepth(errors.Newf("%s.%s panicked: %v", f.info.ProcessorName, f.info.Name, r), 1)
		}
	}()
	return f.handler(ctx, d)
}

// execution describes f's final outcome on d for the recorder.
func (p *Processor) execution(f *function, d *Delivery, c *Compensation, err error) Execution {
	info := f.info
	return Execution{
		EventID: d.EventID(), Function: &info, Compensation: c, Err: err,
		ExecuteAt: p.o.clock.Now(), RetrySpec: f.retrySpec, Waived: f.waived, Rules: f.rules,
		call: d.call, StartedAt: d.started,
	}
}

// record hands x to the recorder, counts and logs the outcome.
func (p *Processor) record(ctx context.Context, x Execution) Outcome {
	out, rerr := OutcomeUnrecorded, error(nil)
	if p.o.recorder != nil {
		out, rerr = p.tracedRecord(ctx, x)
	} else if x.Err == nil {
		out = OutcomeNone
	}
	p.metrics.countOutcome(out)
	attrs := []any{
		"context", p.context, "aggregate", x.EventID.AggregateID.AggregateName + "/" + x.EventID.AggregateID.AggregateID,
		"version", x.EventID.Version, "seq", x.EventID.Seq, "event", x.EventID.ID, "outcome", string(out),
	}
	if x.Function != nil {
		attrs = append(attrs, "processor", x.Function.ProcessorName, "function", x.Function.Name)
	}
	if x.Compensation != nil {
		attrs = append(attrs, "compensation", x.Compensation.ID, "attempt", x.Compensation.Attempt)
	}
	switch {
	case out == OutcomeRecordingFailed:
		if se, ok := rerr.(interface{ SendError() error }); ok {
			attrs = append(attrs, "sendErr", se.SendError())
		}
		p.o.logger.Error("amends processor: recording failed; the message will be redelivered", append(attrs, "err", rerr.Error())...)
	case x.Err != nil && (out == OutcomeUnrecorded || out == OutcomeNone):
		p.o.logger.Warn("amends processor: function failed and was not recorded", append(attrs, "err", x.Err.Error())...)
	case x.Err != nil:
		// Recorded (or waived, or stale): amends has it in hand.
		p.o.logger.Info("amends processor: function failed", append(attrs, "err", x.Err.Error())...)
	case p.o.logger.Enabled(ctx, slog.LevelDebug):
		p.o.logger.Debug("amends processor: replay succeeded", attrs...)
	}
	return out
}

// undecodable logs and counts a message that can never be handled.
func (p *Processor) undecodable(c *ConsumerMetrics, m jetstream.Msg, err error) {
	c.Undecodable.Add(1)
	var stream string
	var seq uint64
	if md, mdErr := m.Metadata(); mdErr == nil {
		stream, seq = md.Stream, md.Sequence.Stream
	}
	p.o.logger.Error("amends processor: undecodable message terminated",
		"context", p.context, "stream", stream, "seq", seq, "subject", m.Subject(), "err", err)
}
