package processor

import (
	"context"
	"log/slog"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/inflight"
	"github.com/amends-dev/amends/quarantine"
)

// dispatch handles one message of group g's consumer: every event of the
// stream goes to every function of g that reacts to it, each function as
// a task of its own (tasks.go), each final failure is recorded, and the
// message is acked once every task finished, unless a recording failed.
func (p *Processor) dispatch(ctx context.Context, g *group, ls *laneState, m *inflight.Msg) {
	st, err := p.store.DecodeMsg(m)
	if err != nil {
		p.undecodable(&p.metrics.ConsumerMetrics, m, err)
		ls.r.settle(m, p.quarantine(ctx, m, DurableName(p.context, g.name), quarantine.ReasonUndecodable, err))
		return
	}
	w := &msgWork{m: m, st: st}
	done, all := ls.r.done.lookup(m.Seq(), m.Delivered() > 1)
	ls.begin(w)
	for _, f := range g.byType[st.Aggregate.Type] {
		if !reactsToAny(f, &w.st) {
			continue
		}
		if all || done.has(f.index) {
			f.stats.Skipped.Add(1)
			w.done.set(f.index)
			continue
		}
		if f.ordered && w.ordered == nil {
			w.ordered = p.newOrderedMsg(g, &w.st, m)
		}
		ls.schedule(ctx, &liveTask{w: w, f: f, k: taskKey{f: f, subject: m.Subject()}})
	}
	ls.end(ctx, w)
}

func reactsToAny(f *function, st *eventstore.Stream) bool {
	for i := range st.Events {
		if f.reacts(st.Events[i].Name) {
			return true
		}
	}
	return false
}

// liveTask is one function on one message of its consumer: each event of
// the message it reacts to, in order, with immediate retries that wait on
// a timer. An Ordered function's task also checks and advances its
// progress and goes through its hold (hold.go, holdrt.go).
type liveTask struct {
	w       *msgWork
	f       *function
	k       taskKey
	ev      int       // the event it is at
	d       *Delivery // that event's delivery, once begun
	holding bool      // its key in the key table (keys.go)
	called  bool      // its last call is made: err is its result
	err     error     // that result
	out     Outcome   // and how its failure was recorded
	g       gate      // its hold's gate (Ordered)
	begun   bool      // its progress was checked (Ordered)
	hkey    string    // its hold and progress key (Ordered)
	entry   progressEntry
	result  disposition
	done    bool
}

func (t *liveTask) key() taskKey                 { return t.k }
func (t *liveTask) message() *msgWork            { return t.w }
func (t *liveTask) bit() int                     { return t.f.index }
func (t *liveTask) outcome() (disposition, bool) { return t.result, t.done }

func (t *liveTask) step(ctx context.Context, ls *laneState) (time.Duration, bool) {
	p, f, st := ls.r.p, t.f, &t.w.st
	if f.ordered && !t.begun && !t.begin(ctx, p, st) {
		return 0, false
	}
	for ; t.ev < len(st.Events); t.ev++ {
		e := &st.Events[t.ev]
		if !f.reacts(e.Name) {
			continue
		}
		if t.d == nil {
			switch t.open(ctx, p, st, e) {
			case gateHeld:
				continue
			case gateRetry:
				return t.fail(ctx, nak)
			}
		}
		if !t.called {
			if wait, more, end := t.call(ctx, ls); end {
				return wait, more
			}
		}
		if !t.settle(ctx, p) {
			return t.fail(ctx, nak) // its later events of the message wait for the redelivery
		}
	}
	if f.ordered && !p.orderedEnd(ctx, f, t.hkey, t.entry, st.Version) {
		return t.fail(ctx, nak)
	}
	t.done = t.result == ack
	return 0, false
}

// begin checks an Ordered function's progress on the aggregate before
// its first event; false ends the task here (done already, or early).
func (t *liveTask) begin(ctx context.Context, p *Processor, st *eventstore.Stream) bool {
	t.begun = true
	var s step
	t.hkey, t.entry, s = p.orderedBegin(ctx, t.f, st, t.w.ordered)
	switch s {
	case stepDone:
		t.done = true // dispatched by an earlier delivery
		return false
	case stepEarly:
		t.result = nak
		return false
	}
	return true
}

// open makes t's delivery of event e of st, and for an Ordered function
// passes it through the aggregate's hold: gateHeld leaves no delivery
// (the event is held), gateRetry asks for the message's redelivery.
func (t *liveTask) open(ctx context.Context, p *Processor, st *eventstore.Stream, e *eventstore.Event) gate {
	t.d = &Delivery{Stream: st, Event: e, Index: t.ev, Function: t.f.info, cacheState: true}
	if !t.f.ordered {
		return gateRun
	}
	if t.g = p.gate(ctx, t.f, t.d, t.entry.held); t.g == gateHeld {
		t.d = nil
	}
	return t.g
}

// call calls the function on t's delivery: end reports that step returns
// (wait, more) now, to wait for a retry, for the failure's record, or
// because the processor stopped.
func (t *liveTask) call(ctx context.Context, ls *laneState) (wait time.Duration, more, end bool) {
	p, f := ls.r.p, t.f
	wait, more, parked, err := p.exclusiveCall(ctx, ls, t.k, callKey{f: f, subject: t.k.subject}, &t.holding, f, t.d)
	if parked {
		return resumeLater, true, true
	}
	if more {
		return wait, true, true
	}
	if err != nil && ctx.Err() != nil {
		w, m := t.fail(ctx, interrupted) // stopped midway: neither record nor ack
		return w, m, true
	}
	t.called, t.err, t.out = true, err, OutcomeNone
	if err != nil {
		// Recorded off the lane: its siblings and the lane's other
		// aggregates need not wait for the record's round trips.
		// The function's later events of the aggregate do.
		x := p.execution(f, t.d, nil, err)
		ls.background(ctx, t.k, func(ctx context.Context) { t.out = p.record(ctx, x) })
		return resumeLater, true, true
	}
	return 0, false, false
}

// settle ends the call on t's delivery: an Ordered function's hold and
// progress follow its outcome. false asks for the message's redelivery
// (the hold or progress could not be written, or the failure recorded).
func (t *liveTask) settle(ctx context.Context, p *Processor) bool {
	err, out := t.err, t.out
	if t.f.ordered && (!p.afterOrdered(ctx, t.f, t.d, t.g, err, out) || out == OutcomeRecordingFailed) {
		return false
	}
	if out == OutcomeRecordingFailed {
		t.result = nak
	}
	t.d, t.called, t.err = nil, false, nil
	return true
}

// fail ends t with d (interrupted if the processor stopped meanwhile).
func (t *liveTask) fail(ctx context.Context, d disposition) (time.Duration, bool) {
	if ctx.Err() != nil {
		d = interrupted
	}
	t.result = max(t.result, d)
	return 0, false
}

// admit asks f's circuit (br, nil: none) to let the call of d through at
// now; a refusal is counted and returned.
func admit(ctx context.Context, br *circuit.Breaker, f *function, d *Delivery, now time.Time) (circuit.Ticket, *circuit.OpenError) {
	if br == nil {
		return circuit.Ticket{}, nil
	}
	c := circuit.Call{Event: d.Event.ID, Aggregate: d.Stream.Aggregate.ID, Record: d.record, Known: d.prior != nil}
	ticket, refused := br.Allow(ctx, now, c)
	if refused != nil {
		f.stats.Refused.Add(1) // its failure is counted by the counted step
		return ticket, refused
	}
	if ticket.Probe() {
		f.stats.Probes.Add(1)
	}
	return ticket, nil
}

// observe tells f's circuit how the call of d admitted at now ended: err,
// with a retry to come (again) or not.
func (p *Processor) observe(ctx context.Context, br *circuit.Breaker, ticket circuit.Ticket, f *function, d *Delivery, now time.Time, err error, again bool) {
	switch {
	case err == nil && !ticket.Probe() && !br.Failing():
		br.Done(ctx, now, ticket, circuit.Outcome{}) // the usual call: no allocation
	case err == nil || ctx.Err() == nil: // a call cancelled by the shutdown says nothing of the dependency
		// One execution, its call and its immediate retries, is one
		// observation: a failure with a retry to come is pending.
		o := circuit.Outcome{Err: err, Pending: again}
		if err != nil {
			o.Counted = d.class != aggregate.Unrecoverable
			o.Last = func() circuit.Failure { return p.failureOf(f, err) }
		}
		br.Done(ctx, p.o.clock.Now(), ticket, o)
	}
}

// retrying counts and logs immediate retry d.n+1 of f on d, after wait,
// and moves d to it.
func (p *Processor) retrying(ctx context.Context, f *function, d *Delivery, wait time.Duration, err error) {
	f.stats.Retries.Add(1)
	if p.o.logger.Enabled(ctx, slog.LevelDebug) {
		p.o.logger.Debug("amends processor: recoverable failure; retrying in process",
			"context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "event", d.Event.ID,
			"retry", d.n+1, "of", f.retry.Retries, "delay", wait, "err", err.Error())
	}
	d.n++
}

// callOnLane makes the next call of f on d for a task of ls: with more,
// the task waits for the immediate retry on a timer (tasks.go); a retry
// the lane sheds (its runner holds too many messages) ends the attempt.
func (p *Processor) callOnLane(ctx context.Context, ls *laneState, f *function, d *Delivery) (wait time.Duration, more bool, err error) {
	wait, again, err := p.call(ctx, f, d)
	if again && !ls.r.shed() {
		p.retrying(ctx, f, d, wait, err)
		return wait, true, err
	}
	if again {
		f.stats.RetriesShed.Add(1)
		f.stats.Failed.Add(1)
	}
	return 0, false, err
}

// execution describes f's final outcome on d for the recorder.
func (p *Processor) execution(f *function, d *Delivery, c *Compensation, err error) Execution {
	info := f.info
	x := Execution{
		EventID: d.EventRef(), Function: &info, Compensation: c, Err: err,
		ExecuteAt: p.o.clock.Now(), RetrySpec: f.retrySpec, Waived: f.waived, Rules: f.rules, Recoverable: d.class,
		call: d.call, StartedAt: d.started,
	}
	if d.prior != nil && errors.Is(err, circuit.ErrOpen) {
		x.Prior = d.prior
	}
	return x
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
	switch {
	case out == OutcomeRecordingFailed:
		attrs := p.recordAttrs(&x, out)
		if se, ok := rerr.(interface{ SendError() error }); ok {
			attrs = append(attrs, "sendErr", se.SendError())
		}
		p.o.logger.Error("amends processor: recording failed; the message will be redelivered", append(attrs, "err", rerr.Error())...)
	case x.Err != nil && (out == OutcomeUnrecorded || out == OutcomeNone):
		p.o.logger.Warn("amends processor: function failed and was not recorded", append(p.recordAttrs(&x, out), "err", x.Err.Error())...)
	case x.Err != nil:
		// Recorded (or waived, or stale): amends has it in hand. A line per
		// failure would drown the log under load (and during an outage);
		// the summary gives the counts per function at Info (digest.go),
		// and the circuit's transitions are logged.
		refused := errors.Is(x.Err, circuit.ErrOpen)
		if x.Function != nil {
			p.failures.add(x.Function.ProcessorName, x.Function.Name, x.Err.Error(), refused)
		}
		if debugEnabled(ctx, p.o.logger) {
			msg := "amends processor: function failed"
			if refused {
				msg = "amends processor: circuit open; failure recorded without a call"
			}
			p.o.logger.Debug(msg, append(p.recordAttrs(&x, out), "err", x.Err.Error())...)
		}
	case debugEnabled(ctx, p.o.logger):
		p.o.logger.Debug("amends processor: replay succeeded", p.recordAttrs(&x, out)...)
	}
	return out
}

// recordAttrs are the log attributes of x's recording with outcome out,
// built only for a line that is written: a record per failure would
// otherwise allocate them for nothing.
func (p *Processor) recordAttrs(x *Execution, out Outcome) []any {
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
	return attrs
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
