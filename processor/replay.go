package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/internal/inflight"
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
func (p *Processor) dispatchReplay(ctx context.Context, ls *laneState, m *inflight.Msg) {
	consumer := ReplayDurableName(p.context)
	rec, err := p.store.DecodeMsg(m)
	if err != nil {
		p.metrics.Replay.Undecodable.Add(1)
		ls.r.settle(m, p.quarantine(ctx, m, consumer, quarantine.ReasonUndecodable, err))
		return
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
			ls.r.settle(m, p.quarantine(ctx, m, consumer, quarantine.ReasonUndecodable,
				fmt.Errorf("record %s version %d event %s: %w", rec.Aggregate.ID, rec.Version, e.ID, err)))
			return
		}
		if prep := ev.(aggregate.CompensationPrepared); prep.Function.ContextName == p.context {
			preps = append(preps, prep)
		}
	}
	w := &msgWork{m: m, st: rec, finish: func(ctx context.Context, w *msgWork) disposition {
		return p.finishReplay(ctx, w, succeeded)
	}}
	done, all := ls.r.done.lookup(m.Seq(), m.Delivered() > 1)
	ls.begin(w)
	for i, prep := range preps {
		if all || done.has(i) {
			w.done.set(i)
			continue
		}
		k := taskKey{name: prep.Function.ProcessorName + "." + prep.Function.Name, subject: m.Subject()}
		ls.schedule(ctx, &replayTask{w: w, i: i, k: k, prep: prep})
	}
	ls.end(ctx, w)
}

// finishReplay settles a replay message once its replays finished: a
// corrupt one is quarantined, a hold whose head succeeded is released,
// and one that failed transiently is retried later or quarantined.
func (p *Processor) finishReplay(ctx context.Context, w *msgWork, succeeded bool) disposition {
	consumer := ReplayDurableName(p.context)
	switch w.result {
	case term:
		return p.quarantine(ctx, w.m, consumer, quarantine.ReasonCorrupt, w.cause)
	case interrupted:
		return interrupted
	}
	var retry error
	if w.result == nak {
		retry = w.cause
	}
	if succeeded && p.holds != nil {
		if err := p.headSucceeded(ctx, w.st); err != nil {
			retry = err
		}
	}
	if retry != nil {
		return p.retryReplay(ctx, w.m, retry)
	}
	return ack
}

// replayTask is one prepared attempt: the recorded function alone, on the
// original event, with the compensation in its context, never beside a
// live call of the function on the event's aggregate (keys.go), its
// immediate retries waiting on a timer; then the result reported with
// the attempt.
type replayTask struct {
	w    *msgWork
	i    int
	k    taskKey
	prep aggregate.CompensationPrepared
	// Once the record and the event are read: what to run, and its key in
	// the key table (keys.go), which it holds while it calls.
	ready   bool
	f       *function
	d       *Delivery
	c       Compensation
	fn      aggregate.FunctionInfo
	ck      callKey
	holding bool
	// settling: its result is being recorded; recorded is how that went.
	settling bool
	recorded disposition
	cause    error
	result   disposition
	done     bool
}

func (t *replayTask) key() taskKey                 { return t.k }
func (t *replayTask) message() *msgWork            { return t.w }
func (t *replayTask) bit() int                     { return t.i }
func (t *replayTask) outcome() (disposition, bool) { return t.result, t.done }

func (t *replayTask) step(ctx context.Context, ls *laneState) (time.Duration, bool) {
	p := ls.r.p
	// The prepare's trace, the replay's parent, again: a task that resumes
	// (after its retry's timer, its result's record, or a task ahead of
	// it) runs with its lane's context.
	ctx = tracing.StreamContext(ctx, &t.w.st)
	if t.settling {
		return t.end(t.recorded, t.cause)
	}
	if !t.ready {
		d, err := p.prepareReplay(ctx, t)
		if !t.ready {
			return t.end(d, err)
		}
	}
	ctx = WithCompensation(ctx, t.c)
	// A live call of the function on the event's aggregate runs on a lane
	// of another consumer: the key table keeps the two apart.
	wait, more, parked, err := p.exclusiveCall(ctx, ls, t.k, t.ck, &t.holding, t.f, t.d)
	if parked {
		return resumeLater, true
	}
	if more {
		return wait, true
	}
	if err != nil && ctx.Err() != nil {
		return t.end(interrupted, nil)
	}
	if !errors.Is(err, circuit.ErrOpen) {
		t.f.stats.Replayed.Add(1)
	}
	x := p.execution(t.f, t.d, &t.c, err)
	x.Function = &t.fn
	// Recorded off the lane, as a live failure is; the task ends once the
	// result is recorded.
	ls.background(ctx, t.k, func(ctx context.Context) { t.recorded, t.cause = p.settleReplay(ctx, t.w.st.Aggregate.ID, x) })
	t.settling = true
	return resumeLater, true
}

// end finishes t with d, and its cause for a nak or term.
func (t *replayTask) end(d disposition, cause error) (time.Duration, bool) {
	t.result, t.done = d, d == ack
	if d == nak || d == term {
		t.w.cause = cause
	}
	return 0, false
}

// prepareReplay reads what t's replay needs: the record (when the
// processor has WithRecords) and the original event, at once. It sets
// t.ready when the function is to run; otherwise it returns how t ends:
// skipped (a stale attempt), reported as failed (the function or event is
// gone), or nak or term with the cause.
func (p *Processor) prepareReplay(ctx context.Context, t *replayTask) (disposition, error) {
	p.metrics.Replays.Add(1)
	id, version, prep := t.w.st.Aggregate.ID, t.w.st.Version, t.prep
	c := Compensation{ID: id, Attempt: prep.RetryState.Retries, Prepared: version}
	fn := prep.Function
	var prior *PriorFailure // without the record, a replay is judged as a fresh call
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
		st, got, err := p.readRecord(ctx, t.w.st)
		if err == nil && got < version {
			// The record's version of this message is committed but not
			// yet readable (a replica, or the stream leader, has not
			// applied it): not stale, only early. Try again shortly.
			return nak, fmt.Errorf("read record %s to replay it: version %d is not readable yet (read version %d)", id, version, got)
		}
		switch {
		case err == nil, errors.Is(err, aggregate.ErrNotFound):
		case errors.Is(err, eventstore.ErrCorrupt), errors.Is(err, eventstore.ErrInvalid), errors.Is(err, aggregate.ErrIllegalArgument):
			return term, fmt.Errorf("read record %s to replay it: %w", id, err)
		default:
			return nak, fmt.Errorf("read record %s to replay it: %w", id, err)
		}
		if err != nil || st.Status != aggregate.StatusPrepared || st.Attempt() != c.Attempt || st.Function.ContextName != p.context {
			p.metrics.ReplaysSkipped.Add(1)
			return ack, nil
		}
		fn = st.Function
		if st.Error.ErrorCode != circuit.ErrorCode {
			prior = &PriorFailure{Error: st.Error, Recoverable: st.Recoverable}
		}
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
	d := &Delivery{Stream: &st, Event: &st.Events[idx], Index: idx, Function: f.info, record: id, prior: prior}
	return p.readyReplay(t, f, d, c, fn)
}

// readyReplay sets what t runs: f on d for compensation c, holding f's
// key on d's aggregate (keys.go). An aggregate without a subject (the
// store refuses its id) can never be replayed: term.
func (p *Processor) readyReplay(t *replayTask, f *function, d *Delivery, c Compensation, fn aggregate.FunctionInfo) (disposition, error) {
	subject, err := p.store.Subject(d.Stream.Aggregate)
	if err != nil {
		return term, fmt.Errorf("the event to replay record %s: %w", c.ID, err)
	}
	t.ready, t.f, t.d, t.c, t.fn, t.ck = true, f, d, c, fn, callKey{f: f, subject: subject}
	return ack, nil
}

// readRecord reads the record of rec, the replayed message, at rec's
// version or later: a reader that can is given the message, whose state it
// need not read again (aggregate.Service.GetDelivered), or asked for at
// least that version, so that a replica lagging behind the message never
// makes the replay look stale.
func (p *Processor) readRecord(ctx context.Context, rec eventstore.Stream) (aggregate.State, uint64, error) {
	switch r := p.o.records.(type) {
	case interface {
		GetDelivered(ctx context.Context, st eventstore.Stream) (aggregate.State, uint64, error)
	}:
		return r.GetDelivered(ctx, rec)
	case interface {
		GetAtLeast(ctx context.Context, id string, v uint64) (aggregate.State, uint64, error)
	}:
		return r.GetAtLeast(ctx, rec.Aggregate.ID, rec.Version)
	}
	return p.o.records.Get(ctx, rec.Aggregate.ID)
}

func (p *Processor) settleReplay(ctx context.Context, id string, x Execution) (disposition, error) {
	if p.record(ctx, x) == OutcomeRecordingFailed {
		return nak, fmt.Errorf("the result of replaying record %s could not be recorded", id)
	}
	return ack, nil
}

// original loads the stream holding event eid (eventstore.Locate). It
// returns an error matching ErrEventNotFound if the store does not hold it.
func (p *Processor) original(ctx context.Context, eid aggregate.EventID) (eventstore.Stream, int, error) {
	a := eid.AggregateID.StoreID()
	st, i, err := eventstore.Locate(ctx, p.store, a, eid.ID, eid.Version, eid.Seq)
	if errors.Is(err, eventstore.ErrNotFound) || errors.Is(err, eventstore.ErrInvalid) || errors.Is(err, eventstore.ErrCorrupt) {
		return eventstore.Stream{}, 0, fmt.Errorf("event %s of %s version %d (sequence %d) is not in the store: %v: %w", eid.ID, a, eid.Version, eid.Seq, err, ErrEventNotFound)
	}
	return st, i, err
}
