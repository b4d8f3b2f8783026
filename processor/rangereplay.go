package processor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/kvstore"
)

// WithRangeReplays makes the processor run operators' range replays (see
// ReplayRequest, amends replay) of its context's functions: it watches
// the ReplayBucket and runs each pending request of a function registered
// here, one instance at a time per request (a claim renewed every third of
// AckWait), resuming a stopped one from its recorded progress. Off by
// default; it needs a recorder, which records the events that still fail.
func WithRangeReplays() Option {
	return func(o *options) error { o.rangeReplays = true; return nil }
}

// errRecordingFailed: a range replay's event failed and its failure could
// not be recorded (the recorder logged why).
var errRecordingFailed = errors.New("a failure could not be recorded")

type rangeRuntime struct {
	kv      *replays
	owner   string
	mu      sync.Mutex
	pending map[string]api.Replay // requests of this context not DONE
	notify  chan struct{}
	watch   jetstream.KeyWatcher
}

// startRanges opens the replay bucket and watches it.
func (p *Processor) startRanges(ctx context.Context) error {
	if !p.o.rangeReplays {
		return nil
	}
	if p.o.recorder == nil {
		return fmt.Errorf("processor of context %s: WithRangeReplays needs WithRecorder, which records the events that still fail: %w", p.context, ErrInvalidOption)
	}
	kv, err := replaysBucket(ctx, p.js, p.o.holdReplicas, kvstore.WithRecorder(p.o.quarantine), kvstore.WithLogger(p.o.logger), kvstore.WithClock(p.o.clock.Now))
	if err != nil {
		return fmt.Errorf("processor of context %s: %w", p.context, err)
	}
	w, err := kv.KV().WatchAll(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("processor of context %s: watch range replays: %w", p.context, err)
	}
	p.ranges = &rangeRuntime{kv: kv, owner: uuid.NewString(), pending: make(map[string]api.Replay), notify: make(chan struct{}, 1), watch: w}
	return nil
}

// runRanges feeds the watch into the pending set and runs the requests
// whose function is registered here and whose claim is free, one at a
// time per request; it returns once every run it started has returned.
func (p *Processor) runRanges(stopping, work context.Context) {
	rt := p.ranges
	defer func() { _ = rt.watch.Stop() }()
	var (
		wg      sync.WaitGroup
		running = make(map[string]bool)
		mu      sync.Mutex
	)
	defer wg.Wait()
	t := time.NewTicker(max(p.claimTTL()/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-stopping.Done():
			return
		case e, ok := <-rt.watch.Updates():
			if !ok {
				return
			}
			if e != nil {
				rt.apply(work, p.context, e)
			}
		case <-t.C:
		}
		for _, r := range rt.claimable(p.o.clock.Now().UnixMilli()) {
			f, ok := p.lookup(r.Processor, r.Function)
			mu.Lock()
			busy := running[r.ID]
			if ok && !busy {
				running[r.ID] = true
			}
			mu.Unlock()
			if !ok || busy {
				continue
			}
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(running, r.ID)
					mu.Unlock()
				}()
				p.runRange(stopping, work, f, r.ID)
			})
		}
	}
}

// apply takes one change of the bucket; a request that does not validate
// (DecodeReplay) is quarantined by the store and never run.
func (rt *rangeRuntime) apply(ctx context.Context, boundedContext string, e jetstream.KeyValueEntry) {
	var r api.Replay
	var err error
	if e.Operation() == jetstream.KeyValuePut {
		r, err = rt.kv.DecodeEntry(ctx, e)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(rt.pending, e.Key())
		return
	}
	if err != nil || r.Context != boundedContext || r.Status == ReplayDone {
		delete(rt.pending, e.Key())
		return
	}
	rt.pending[e.Key()] = r
}

// runRange runs request id: it claims it, then replays its range from the
// recorded Next, one stream at a time at most Rate events per second,
// recording after each stream the progress (and the claim's renewal).
func (p *Processor) runRange(stopping, work context.Context, f *function, id string) {
	rt := p.ranges
	log := p.o.logger.With("context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "replay", id)
	r, err := updateReplay(work, rt.kv, id, p.claimRange)
	if err != nil {
		if !errors.Is(err, errClaimed) && !errors.Is(err, errNotReleasing) {
			log.Warn("amends processor: cannot claim the range replay", "err", err)
		}
		return
	}
	log.Info("amends processor: range replay running", "next", r.Next, "last", r.Last(), "actor", r.Actor, "reason", r.Reason)
	interval := time.Duration(float64(time.Second) / max(r.Rate, 1))
	streams, err := p.rangeSource(work, &r)
	if err != nil {
		log.Warn("amends processor: cannot read the range; retrying later", "err", err)
		return
	}
	for stopping.Err() == nil {
		st, pos, more, err := streams()
		if err != nil {
			log.Warn("amends processor: cannot read the range; retrying later", "err", err)
			return
		}
		var replayed, failed uint64
		if more {
			if replayed, failed, err = p.replayRangeStream(stopping, f, id, &r, &st, interval); err != nil {
				if !errors.Is(err, errNotRun) {
					log.Warn("amends processor: range replay stopped at a stream; it runs again from there", "seq", st.Seq, "err", err)
				}
				return
			}
		}
		if r, err = p.advanceRange(work, id, pos, replayed, failed, more); err != nil {
			log.Warn("amends processor: range replay progress not recorded; stopping it here", "err", err)
			return
		}
		if !more {
			log.Info("amends processor: range replay done", "replayed", r.Replayed, "failed", r.Failed)
			return
		}
	}
}

// claimRange claims range replay r for this instance, unless it is done
// or another instance's claim runs.
func (p *Processor) claimRange(r *api.Replay) error {
	now := p.o.clock.Now()
	if r.Status == ReplayDone {
		return errNotReleasing
	}
	if r.Claim != nil && r.Claim.Owner != p.ranges.owner && r.Claim.Until > now.UnixMilli() {
		return errClaimed
	}
	r.Claim = &api.HoldClaim{Owner: p.ranges.owner, Until: now.Add(p.claimTTL()).UnixMilli()}
	r.Status, r.Updated = ReplayRunning, now.UnixMilli()
	return nil
}

// replayRangeStream gives f the events of st that r selects, one every
// interval, each as a task of its aggregate's lane (runOnLane), and
// records their failures. An error says that the replay must stop here,
// not advanced past st: errNotRun (stopping), a failure that could not be
// recorded, or one that could not be given.
func (p *Processor) replayRangeStream(stopping context.Context, f *function, id string, r *api.Replay, st *eventstore.Stream, interval time.Duration) (replayed, failed uint64, err error) {
	for i := range st.Events {
		e := &st.Events[i]
		if !replayMatches(r, st, e) || !f.types[st.Aggregate.Type] || !f.reacts(e.Name) {
			continue
		}
		if err := p.o.sleep(stopping, interval); err != nil {
			return replayed, failed, errNotRun
		}
		d := &Delivery{Stream: st, Event: e, Index: i, Function: f.info}
		res, err := p.runOnLane(stopping, f, d, Compensation{Request: id})
		if err != nil {
			return replayed, failed, err
		}
		replayed++
		if res.err != nil {
			if res.out == OutcomeRecordingFailed {
				return replayed, failed, errRecordingFailed
			}
			failed++
		}
	}
	return replayed, failed, nil
}

// advanceRange records the range replay's progress to pos, and its end
// when there is no more, under this instance's claim.
func (p *Processor) advanceRange(work context.Context, id string, pos, replayed, failed uint64, more bool) (api.Replay, error) {
	now := p.o.clock.Now()
	return updateReplay(work, p.ranges.kv, id, func(q *api.Replay) error {
		if q.Claim == nil || q.Claim.Owner != p.ranges.owner {
			return errClaimed
		}
		q.Replayed += replayed
		q.Failed += failed
		q.Next, q.Updated = pos, now.UnixMilli()
		q.Claim.Until = now.Add(p.claimTTL()).UnixMilli()
		if !more {
			q.Status, q.Claim = ReplayDone, nil
		}
		return nil
	})
}

// rangeSource returns an iterator over r's streams from r.Next: each call
// gives the next stream, the position after it and true, or false at the
// end (with the position after the range).
func (p *Processor) rangeSource(ctx context.Context, r *api.Replay) (func() (eventstore.Stream, uint64, bool, error), error) {
	if r.ByAggregate() {
		a := eventstore.AggregateID{Context: r.Context, Type: r.AggregateType, ID: r.AggregateID}
		var streams []eventstore.Stream
		if r.Next <= r.ToVersion {
			var err error
			streams, err = p.store.Load(ctx, a, r.Next)
			if err != nil && !errors.Is(err, eventstore.ErrNotFound) {
				return nil, fmt.Errorf("load %s from version %d: %w", a, r.Next, err)
			}
		}
		i := 0
		return func() (eventstore.Stream, uint64, bool, error) {
			if i >= len(streams) || streams[i].Version > r.ToVersion {
				return eventstore.Stream{}, r.ToVersion + 1, false, nil
			}
			st := streams[i]
			i++
			return st, st.Version + 1, true, nil
		}, nil
	}
	end, err := streamEnd(ctx, p.js, p.store, r.Context)
	if err != nil {
		return nil, err
	}
	last := min(r.ToSeq, end)
	seq := r.Next
	return func() (eventstore.Stream, uint64, bool, error) {
		for ; seq <= last; seq++ {
			st, err := p.store.GetSeq(ctx, r.Context, seq)
			switch {
			case errors.Is(err, eventstore.ErrNotFound), errors.Is(err, eventstore.ErrCorrupt), errors.Is(err, eventstore.ErrInvalid):
				continue
			case err != nil:
				return eventstore.Stream{}, seq, true, err
			}
			seq++
			return st, seq, true, nil
		}
		return eventstore.Stream{}, r.ToSeq + 1, false, nil
	}, nil
}

// claimable are the pending range replays this instance may claim at
// now: unclaimed, its own, or with a claim that ended.
func (rt *rangeRuntime) claimable(now int64) []api.Replay {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var ready []api.Replay
	for _, r := range rt.pending {
		if r.Claim == nil || r.Claim.Owner == rt.owner || r.Claim.Until <= now {
			ready = append(ready, r)
		}
	}
	return ready
}
