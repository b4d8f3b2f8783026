package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/amends-dev/amends/internal/inflight"
)

// errNotRun: a call posted to a lane did not finish there (runOnLane).
var errNotRun = errors.New("the call did not finish: the processor stops, or its consumer was lost")

// callTask is one attempt of a function on an event that no message of
// its consumer carries: a range replay's event, a held event's release. It
// is a task of the lane that the event's aggregate has in the function's
// live runner, under the key of the function's live tasks of that
// aggregate, so that it runs in order with them, never beside them. Its
// immediate retries wait on the lane's timer, and its failure is recorded
// off the lane, as a live task's are.
type callTask struct {
	w       *msgWork
	f       *function
	k       taskKey
	d       *Delivery
	c       Compensation
	holding bool // its key in the key table (keys.go)
	called  bool
	res     callResult
	result  disposition
}

// callResult is how a callTask ended: its last call's error and, for a
// failure, how it was recorded.
type callResult struct {
	err error
	out Outcome
}

func (t *callTask) key() taskKey                 { return t.k }
func (t *callTask) message() *msgWork            { return t.w }
func (t *callTask) bit() int                     { return 0 }
func (t *callTask) outcome() (disposition, bool) { return t.result, t.result == ack }

func (t *callTask) step(ctx context.Context, ls *laneState) (time.Duration, bool) {
	if t.called {
		return 0, false // resumed once its failure was recorded
	}
	p, f := ls.r.p, t.f
	ctx = WithCompensation(ctx, t.c)
	wait, more, parked, err := p.exclusiveCall(ctx, ls, t.k, callKey{f: f, subject: t.k.subject}, &t.holding, f, t.d)
	if parked {
		return resumeLater, true
	}
	if more {
		return wait, true
	}
	if err != nil && ctx.Err() != nil {
		t.result = interrupted // stopped midway: neither recorded nor done
		return 0, false
	}
	t.called, t.res.err = true, err
	if err == nil {
		return 0, false
	}
	x := p.execution(f, t.d, nil, err)
	ls.background(ctx, t.k, func(ctx context.Context) { t.res.out = p.record(ctx, x) })
	return resumeLater, true
}

// runOnLane runs an attempt of f on d, for compensation c, as a task of
// the lane of d's aggregate in f's live runner (callTask), records its
// final failure and returns once it finished. While the live consumer is
// not running (it starts, or is being re-created), it waits for it until
// stopping ends. It returns errNotRun when the task did not finish:
// stopping ended, or the consumer was lost and its lanes with it (the call
// may have been made, and its failure recorded, before that); the caller
// gives the event up for now and gives it again later. Safe for
// concurrent use, off the lanes; it blocks until the task finished or its
// lane stopped.
func (p *Processor) runOnLane(stopping context.Context, f *function, d *Delivery, c Compensation) (callResult, error) {
	g := p.byName[f.info.ProcessorName]
	if g == nil || g.live == nil {
		return callResult{}, fmt.Errorf("function %s.%s has no live consumer running: %w", f.info.ProcessorName, f.info.Name, errNotRun)
	}
	subject, err := p.store.Subject(d.Stream.Aggregate)
	if err != nil {
		return callResult{}, err
	}
	t := &callTask{f: f, k: taskKey{f: f, subject: subject}, d: d, c: c}
	finished := make(chan struct{})
	t.w = &msgWork{finish: func(context.Context, *msgWork) disposition { close(finished); return t.result }}
	r := g.live
	lane, ok := r.rt.Post(stopping, subject, func(ctx context.Context, l *inflight.Lane) {
		ls := r.laneState(l)
		ls.begin(t.w)
		ls.schedule(ctx, t)
		ls.end(ctx, t.w)
	})
	if !ok {
		return callResult{}, errNotRun
	}
	select {
	case <-finished:
	case <-lane.Stopped():
		// finish runs on the lane: if it ran, finished was closed before
		// the lane stopped.
		select {
		case <-finished:
		default:
			return callResult{}, errNotRun
		}
	}
	if t.result != ack {
		return callResult{}, errNotRun
	}
	return t.res, nil
}
