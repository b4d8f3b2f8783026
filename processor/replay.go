package processor

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/failure"
)

// dispatchReplay handles one message of the compensation stream: each
// CompensationPrepared of a function of this context is replayed.
func (p *Processor) dispatchReplay(ctx context.Context, m jetstream.Msg) disposition {
	rec, err := p.store.DecodeMsg(m)
	if err != nil {
		p.undecodable(&p.metrics.Replay, m, err)
		return term
	}
	result := ack
	for i := range rec.Events {
		e := &rec.Events[i]
		if e.Name != aggregate.NameCompensationPrepared {
			continue
		}
		ev, err := aggregate.DecodeEvent(e.Name, e.Body)
		if err != nil {
			p.o.logger.Error("amends processor: undecodable compensation event skipped",
				"record", rec.Aggregate.ID, "seq", rec.Seq, "event", e.ID, "err", err)
			continue
		}
		prep := ev.(aggregate.CompensationPrepared)
		if prep.Function.ContextName != p.context {
			continue
		}
		if d := p.replay(ctx, rec.Aggregate.ID, rec.Version, prep); d != ack {
			result = d
		}
	}
	return result
}

// replay runs one prepared attempt: the recorded function alone, on the
// original event, with the compensation in its context; then reports the
// result with the attempt.
func (p *Processor) replay(ctx context.Context, id string, version uint64, prep aggregate.CompensationPrepared) disposition {
	p.metrics.Replays.Add(1)
	c := Compensation{ID: id, Attempt: prep.RetryState.Retries, Prepared: version}
	fn := prep.Function
	if p.o.records != nil {
		st, _, err := p.o.records.Get(ctx, id)
		if err != nil && !errors.Is(err, aggregate.ErrNotFound) {
			p.o.logger.Warn("amends processor: cannot read the record to replay; retrying later", "record", id, "err", err)
			return nak
		}
		if err != nil || st.Status != aggregate.StatusPrepared || st.Attempt() != c.Attempt || st.Function.ContextName != p.context {
			p.metrics.ReplaysSkipped.Add(1)
			return ack
		}
		fn = st.Function
	}
	x := Execution{EventID: prep.EventID, Function: &fn, Compensation: &c, ExecuteAt: p.o.clock.Now()}
	f, ok := p.lookup(fn.ProcessorName, fn.Name)
	if !ok {
		p.metrics.ReplaysMissing.Add(1)
		x.Err = failure.Unrecoverable(&codedError{code: "FunctionNotFound", kind: ErrFunctionNotFound,
			msg: fmt.Sprintf("function %s.%s is not registered in context %s; change the record's function if it was renamed", fn.ProcessorName, fn.Name, p.context)})
		return p.settleReplay(ctx, x)
	}
	st, idx, err := p.original(ctx, prep.EventID)
	if errors.Is(err, ErrEventNotFound) {
		p.metrics.ReplaysMissing.Add(1)
		x.Err = failure.Unrecoverable(&codedError{code: "EventNotFound", kind: ErrEventNotFound, msg: err.Error()})
		x.RetrySpec, x.Waived, x.Rules = f.retrySpec, f.waived, f.rules
		return p.settleReplay(ctx, x)
	}
	if err != nil {
		p.o.logger.Warn("amends processor: cannot load the event to replay; retrying later", "record", id, "err", err)
		return nak
	}
	d := &Delivery{Stream: &st, Event: &st.Events[idx], Index: idx, Function: f.info}
	err = p.execute(WithCompensation(ctx, c), f, d, false)
	if err != nil && ctx.Err() != nil {
		return interrupted
	}
	f.stats.Replayed.Add(1)
	x = p.execution(f, d, &c, err)
	x.Function = &fn
	return p.settleReplay(ctx, x)
}

func (p *Processor) settleReplay(ctx context.Context, x Execution) disposition {
	if p.record(ctx, x) == OutcomeRecordingFailed {
		return nak
	}
	return ack
}

// original loads the stream holding event eid: by its recorded sequence
// (one direct get), checking it is that event, else by aggregate and
// version. It returns an error matching ErrEventNotFound if neither has it.
func (p *Processor) original(ctx context.Context, eid aggregate.EventID) (eventstore.Stream, int, error) {
	a := eventstore.AggregateID{Context: eid.AggregateID.ContextName, Type: eid.AggregateID.AggregateName, ID: eid.AggregateID.AggregateID}
	if eid.Seq > 0 {
		st, err := p.store.GetSeq(ctx, a.Context, eid.Seq)
		if err == nil && st.Aggregate == a && st.Version == eid.Version {
			if i := eventIndex(&st, eid.ID); i >= 0 {
				return st, i, nil
			}
		}
		if err != nil && !errors.Is(err, eventstore.ErrNotFound) && !errors.Is(err, jsstore.ErrCorrupt) && !errors.Is(err, eventstore.ErrInvalid) {
			return eventstore.Stream{}, 0, err
		}
	}
	st, err := p.store.LoadVersion(ctx, a, eid.Version)
	if errors.Is(err, eventstore.ErrNotFound) || errors.Is(err, eventstore.ErrInvalid) || errors.Is(err, jsstore.ErrCorrupt) {
		return eventstore.Stream{}, 0, fmt.Errorf("event %s of %s version %d (sequence %d) is not in the store: %v: %w", eid.ID, a, eid.Version, eid.Seq, err, ErrEventNotFound)
	}
	if err != nil {
		return eventstore.Stream{}, 0, err
	}
	i := eventIndex(&st, eid.ID)
	if i < 0 {
		return eventstore.Stream{}, 0, fmt.Errorf("%s version %d has no event %s: %w", a, eid.Version, eid.ID, ErrEventNotFound)
	}
	return st, i, nil
}

func eventIndex(st *eventstore.Stream, id string) int {
	for i := range st.Events {
		if st.Events[i].ID == id {
			return i
		}
	}
	return -1
}
