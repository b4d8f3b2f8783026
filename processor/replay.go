package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/quarantine"
	"github.com/amends-dev/amends/tracing"
)

// dispatchReplay handles one message of the compensation stream: each
// CompensationPrepared of a function of this context is replayed.
//
// A message that can never be replayed (it does not decode, one of its
// prepares does not decode, or its record's history is corrupt) is
// quarantined and terminated. One that failed with an error that may be
// transient (the record or the original event could not be read, the
// result could not be recorded) is redelivered after a delay growing with
// its deliveries, and quarantined once they are exhausted (see
// WithReplayRetry). So poison messages never keep the consumer's
// ack-pending slots, and the replays behind them run.
func (p *Processor) dispatchReplay(ctx context.Context, m jetstream.Msg) disposition {
	consumer := ReplayDurableName(p.context)
	rec, err := p.store.DecodeMsg(m)
	if err != nil {
		p.metrics.Replay.Undecodable.Add(1)
		return p.quarantine(ctx, m, consumer, quarantine.ReasonUndecodable, err)
	}
	ctx = tracing.StreamContext(ctx, &rec) // the prepare's trace: the replays' parent
	var preps []aggregate.CompensationPrepared
	resolve := rec.Headers[HeaderResolve] != "" // an operator's release: not replayed
	succeeded := false
	for i := range rec.Events {
		e := &rec.Events[i]
		succeeded = succeeded || e.Name == aggregate.NameExecutionSuccessApplied
		if e.Name != aggregate.NameCompensationPrepared || resolve {
			continue
		}
		ev, err := aggregate.DecodeEvent(e.Name, e.Body)
		if err != nil {
			p.metrics.Replay.Undecodable.Add(1)
			return p.quarantine(ctx, m, consumer, quarantine.ReasonUndecodable,
				fmt.Errorf("record %s version %d event %s: %w", rec.Aggregate.ID, rec.Version, e.ID, err))
		}
		if prep := ev.(aggregate.CompensationPrepared); prep.Function.ContextName == p.context {
			preps = append(preps, prep)
		}
	}
	var retry error
	for _, prep := range preps {
		switch d, err := p.replay(ctx, rec.Aggregate.ID, rec.Version, prep); d {
		case term:
			return p.quarantine(ctx, m, consumer, quarantine.ReasonCorrupt, err)
		case interrupted:
			return interrupted
		case nak:
			retry = err
		}
	}
	if succeeded && p.holds != nil {
		if err := p.headSucceeded(ctx, rec.Aggregate.ID, rec.Version); err != nil {
			retry = err
		}
	}
	if retry != nil {
		return p.retryReplay(ctx, m, retry)
	}
	return ack
}

// replay runs one prepared attempt: the recorded function alone, on the
// original event, with the compensation in its context; then reports the
// result with the attempt. A nak or term comes with its cause.
func (p *Processor) replay(ctx context.Context, id string, version uint64, prep aggregate.CompensationPrepared) (disposition, error) {
	p.metrics.Replays.Add(1)
	c := Compensation{ID: id, Attempt: prep.RetryState.Retries, Prepared: version}
	fn := prep.Function
	// The original event is read while the record is, not after it: the
	// function runs only once both are read, and neither read depends on
	// the other (a replay the record skips wastes one direct get).
	var orig struct {
		st  eventstore.Stream
		idx int
		err error
	}
	read := func() { orig.st, orig.idx, orig.err = p.original(ctx, prep.EventID) }
	var wg sync.WaitGroup
	defer wg.Wait()
	if p.o.records != nil {
		wg.Go(read)
	} else {
		read()
	}
	if p.o.records != nil {
		st, got, err := p.readRecord(ctx, id, version)
		if err == nil && got < version {
			// The record's version of this message is committed but not
			// yet readable (a replica, or the stream leader, has not
			// applied it): not stale, only early. Try again shortly.
			return nak, fmt.Errorf("read record %s to replay it: version %d is not readable yet (read version %d)", id, version, got)
		}
		switch {
		case err == nil, errors.Is(err, aggregate.ErrNotFound):
		case errors.Is(err, jsstore.ErrCorrupt), errors.Is(err, eventstore.ErrInvalid), errors.Is(err, aggregate.ErrIllegalArgument):
			return term, fmt.Errorf("read record %s to replay it: %w", id, err)
		default:
			return nak, fmt.Errorf("read record %s to replay it: %w", id, err)
		}
		if err != nil || st.Status != aggregate.StatusPrepared || st.Attempt() != c.Attempt || st.Function.ContextName != p.context {
			p.metrics.ReplaysSkipped.Add(1)
			return ack, nil
		}
		fn = st.Function
	}
	x := Execution{EventID: prep.EventID, Function: &fn, Compensation: &c, ExecuteAt: p.o.clock.Now()}
	f, ok := p.lookup(fn.ProcessorName, fn.Name)
	if !ok {
		p.metrics.ReplaysMissing.Add(1)
		x.Err = failure.Unrecoverable(&codedError{code: "FunctionNotFound", kind: ErrFunctionNotFound,
			msg: fmt.Sprintf("function %s.%s is not registered in context %s; change the record's function if it was renamed", fn.ProcessorName, fn.Name, p.context)})
		return p.settleReplay(ctx, id, x)
	}
	wg.Wait()
	st, idx, err := orig.st, orig.idx, orig.err
	if errors.Is(err, ErrEventNotFound) {
		p.metrics.ReplaysMissing.Add(1)
		x.Err = failure.Unrecoverable(&codedError{code: "EventNotFound", kind: ErrEventNotFound, msg: err.Error()})
		x.RetrySpec, x.Waived, x.Rules = f.retrySpec, f.waived, f.rules
		return p.settleReplay(ctx, id, x)
	}
	if err != nil {
		return nak, fmt.Errorf("load the event to replay record %s: %w", id, err)
	}
	d := &Delivery{Stream: &st, Event: &st.Events[idx], Index: idx, Function: f.info}
	err = p.execute(WithCompensation(ctx, c), f, d, false)
	if err != nil && ctx.Err() != nil {
		return interrupted, nil
	}
	f.stats.Replayed.Add(1)
	x = p.execution(f, d, &c, err)
	x.Function = &fn
	return p.settleReplay(ctx, id, x)
}

// readRecord reads record id, which the replayed message shows at version
// or later: a reader that can is asked for at least that version, so that
// a replica lagging behind the message never makes the replay look stale.
func (p *Processor) readRecord(ctx context.Context, id string, version uint64) (aggregate.State, uint64, error) {
	if r, ok := p.o.records.(interface {
		GetAtLeast(ctx context.Context, id string, v uint64) (aggregate.State, uint64, error)
	}); ok {
		return r.GetAtLeast(ctx, id, version)
	}
	return p.o.records.Get(ctx, id)
}

func (p *Processor) settleReplay(ctx context.Context, id string, x Execution) (disposition, error) {
	if p.record(ctx, x) == OutcomeRecordingFailed {
		return nak, fmt.Errorf("the result of replaying record %s could not be recorded", id)
	}
	return ack, nil
}

// original loads the stream holding event eid: by its recorded sequence
// (one direct get), checking it is that event, else by aggregate and
// version. It returns an error matching ErrEventNotFound if neither has it.
func (p *Processor) original(ctx context.Context, eid aggregate.EventID) (eventstore.Stream, int, error) {
	a := eid.AggregateID.StoreID()
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
