package processor

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
)

var (
	errNotReleasing = errors.New("the hold is not being released")
	errClaimed      = errors.New("another instance runs the release")
)

// claimTTL is how long a release claim lasts without renewal: AckWait,
// the time after which JetStream too hands a silent instance's messages
// to another.
func (p *Processor) claimTTL() time.Duration { return p.o.ackWait }

// runReleases runs the releases of this context's holds whose functions
// are registered here: at each change of a hold and every third of the
// claim TTL, every hold being released and not claimed by a live instance
// is claimed and released, at most WithReplayConcurrency at once. It
// returns once every release it started has returned.
func (p *Processor) runReleases(stopping, work context.Context) {
	rt := p.holds
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		running = make(map[string]bool)
		slots   = make(chan struct{}, p.o.replayLanes)
	)
	t := time.NewTicker(max(p.claimTTL()/3, 10*time.Millisecond))
	defer func() {
		t.Stop()
		wg.Wait()
	}()
	for {
		now := p.o.clock.Now().UnixMilli()
		for _, h := range rt.cache.releasing() {
			key := h.Key()
			f, ok := p.lookup(h.Processor, h.Function)
			if !ok || !f.ordered || (h.Claim != nil && h.Claim.Owner != rt.owner && h.Claim.Until > now) {
				continue
			}
			mu.Lock()
			busy := running[key]
			mu.Unlock()
			if busy {
				continue
			}
			select {
			case slots <- struct{}{}:
			default:
				continue // all busy: the next tick
			}
			mu.Lock()
			running[key] = true
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(running, key)
					mu.Unlock()
					<-slots
				}()
				p.release(stopping, work, f, key)
			})
		}
		select {
		case <-stopping.Done():
			return
		case <-rt.cache.notify:
		case <-t.C:
		}
	}
}

// releaseChunk is how many held events one claim takes from a hold over
// MaxHeld (which only another program writes): they are given to the
// function one at a time and removed from the hold in one write after the
// chunk, so that such a hold is not rewritten after every event. A hold of
// at most MaxHeld gives one event per claim and removes it right after it
// ran, so that a processor killed mid-release runs at most that one event
// again, never an earlier one after a later.
const releaseChunk = 64

// chunkOf is how many held events of h one claim takes.
func chunkOf(h *api.Hold) int {
	if len(h.Held) > MaxHeld {
		return releaseChunk
	}
	return 1
}

// releaseWriteTimeout bounds the write that removes a chunk's released
// events from the hold, which also runs when the processor stops.
const releaseWriteTimeout = 5 * time.Second

// release gives the held events of f's hold key to f in version order,
// one at a time, each removed from the hold only after f succeeded on it,
// in the same write that claims the next (a hold over MaxHeld: a chunk
// per claim; see releaseChunk). A failure is recorded and becomes the new
// head; the hold then waits again. It returns when the hold is empty (and
// deleted), waits, is claimed by another instance, or the processor stops
// (a held event interrupted runs again on the next claim).
func (p *Processor) release(stopping, work context.Context, f *function, key string) {
	rt := p.holds
	log := p.o.logger.With("context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "key", key)
	var (
		done    map[string]bool // released since the last write
		newHead *api.HoldHead   // the head of a recorded failure, since the last write
	)
	for {
		round := releaseRound{done: done, newHead: newHead, stopping: stopping, owner: rt.owner, now: p.o.clock.Now(), ttl: p.claimTTL()}
		ctx := work
		if stopping.Err() != nil {
			if len(done) == 0 {
				return
			}
			// What was released is written even when the processor stops,
			// so that it does not run again on the next claim.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.WithoutCancel(work), releaseWriteTimeout)
			defer cancel()
		}
		_, err := rt.update(ctx, key, round.apply)
		switch {
		case errors.Is(err, errNotReleasing), errors.Is(err, errClaimed), errors.Is(err, errNoHold):
			return
		case err != nil:
			log.Warn("amends processor: cannot claim the release; retrying", "err", err)
			if stopping.Err() != nil || Sleep(stopping, p.o.nakDelay) != nil {
				return
			}
			continue
		}
		done = nil
		switch {
		case newHead != nil || stopping.Err() != nil:
			return // waits on its new head, or stopped
		case round.empty:
			log.Debug("amends processor: hold released")
			return
		case len(round.refs) == 0:
			return
		}
		done, newHead = p.releaseRefs(stopping, work, f, key, round.head, round.a, round.refs, log)
	}
}

// releaseRound is one write of a release's hold: it removes the events
// released since the last write (done), sets a new head, or claims the
// hold and takes the next events to release (refs, of aggregate a, behind
// head); empty: none is left.
type releaseRound struct {
	done     map[string]bool
	newHead  *api.HoldHead
	stopping context.Context // the processor stops: removals only
	owner    string
	now      time.Time
	ttl      time.Duration

	refs  []api.HeldEvent
	head  string
	a     aggregate.WireAggregateID
	empty bool
}

// apply is the round's change of hold h, for the hold store's update.
func (r *releaseRound) apply(h *api.Hold) (bool, error) {
	r.refs, r.empty = nil, false
	removed := false
	if len(r.done) > 0 {
		n := len(h.Held)
		h.Held = slices.DeleteFunc(h.Held, func(e api.HeldEvent) bool { return r.done[e.EventID] })
		removed = len(h.Held) != n
	}
	if r.newHead != nil {
		h.Head = *r.newHead
		h.Releasing, h.Claim, h.Released = false, nil, nil
		return false, nil
	}
	stopping := r.stopping.Err() != nil
	switch {
	case stopping && removed:
		return false, nil
	case stopping:
		return false, errUnchanged
	case !h.Releasing || h.Claim != nil && h.Claim.Owner != r.owner && h.Claim.Until > r.now.UnixMilli():
		return false, r.unclaimable(h, removed)
	case len(h.Held) == 0:
		r.empty = true
		return true, nil
	}
	h.Claim = &api.HoldClaim{Owner: r.owner, Until: r.now.Add(r.ttl).UnixMilli()}
	r.refs, r.head = slices.Clone(h.Held[:min(len(h.Held), chunkOf(h))]), h.Head.Record
	r.a = aggregate.WireAggregateID{ContextName: h.Context, AggregateName: h.AggregateType, AggregateID: h.AggregateID, TenantID: aggregate.DefaultTenantID}
	return false, nil
}

// unclaimable is why a hold not releasing, or claimed by another
// instance, is not changed: nil when the round's removals are written.
func (r *releaseRound) unclaimable(h *api.Hold, removed bool) error {
	switch {
	case removed:
		return nil // the removals only
	case !h.Releasing:
		return errNotReleasing
	}
	return errClaimed
}

// releaseStep is what became of one held event.
type releaseStep int

const (
	releaseDone    releaseStep = iota // handled (or gone from the store): remove it
	releaseNewHead                    // failed and recorded: remove it, it is the new head
	releaseAgain                      // not handled, for now: give it again later
	releaseStop                       // interrupted: stop here
)

// releaseRefs gives refs to f in order, renewing the claim meanwhile, and
// returns those handled and, for a recorded failure, the new head; the
// caller removes them from the hold in its next write.
func (p *Processor) releaseRefs(stopping, work context.Context, f *function, key, head string, a aggregate.WireAggregateID, refs []api.HeldEvent, log *slog.Logger) (map[string]bool, *api.HoldHead) {
	renewed := make(chan struct{})
	var renew sync.WaitGroup
	renew.Go(func() { p.renewClaim(work, key, renewed) })
	defer func() {
		close(renewed)
		renew.Wait()
	}()
	done := make(map[string]bool, len(refs))
	for _, ref := range refs {
		step, h := p.releaseOne(stopping, work, f, head, a, ref, log)
		switch step {
		case releaseDone:
			done[ref.EventID] = true
		case releaseNewHead:
			done[ref.EventID] = true
			return done, h
		default: // again later, or interrupted: the rest waits for the next claim
			return done, nil
		}
	}
	return done, nil
}

// releaseOne runs f on held event ref and says what became of it; with
// releaseNewHead, the head of its recorded failure.
func (p *Processor) releaseOne(stopping, work context.Context, f *function, head string, a aggregate.WireAggregateID, ref api.HeldEvent, log *slog.Logger) (releaseStep, *api.HoldHead) {
	eid := aggregate.EventID{ID: ref.EventID, AggregateID: a, Version: ref.Version, Seq: ref.Seq}
	st, idx, err := p.original(work, eid)
	if errors.Is(err, ErrEventNotFound) {
		log.Warn("amends processor: a held event is no longer in the store; dropped from the hold", "event", ref.EventID, "version", ref.Version, "err", err)
		return releaseDone, nil
	}
	if err != nil {
		log.Warn("amends processor: cannot load a held event; retrying", "event", ref.EventID, "err", err)
		_ = Sleep(stopping, p.o.nakDelay)
		return releaseAgain, nil
	}
	d := &Delivery{Stream: &st, Event: &st.Events[idx], Index: idx, Function: f.info}
	res, err := p.runOnLane(stopping, f, d, Compensation{ID: head, Release: true})
	switch {
	case errors.Is(err, errNotRun) && stopping.Err() != nil:
		return releaseStop, nil // interrupted: the next claim runs it again
	case err != nil:
		if !errors.Is(err, errNotRun) {
			log.Warn("amends processor: cannot give a held event; retrying", "event", ref.EventID, "err", err)
		}
		_ = Sleep(stopping, p.o.nakDelay)
		return releaseAgain, nil // the consumer is re-created: the same event again
	case res.err == nil:
		f.stats.Released.Add(1)
		return releaseDone, nil
	}
	out := res.out
	if out == OutcomeRecordingFailed {
		_ = Sleep(stopping, p.o.nakDelay)
		return releaseAgain, nil // the same event again
	}
	f.stats.Released.Add(1)
	if out == OutcomeRecorded || out == OutcomeAlreadyRecorded {
		h := headOf(f, d.EventRef(), p.o.clock.Now().UnixMilli())
		return releaseNewHead, &h // waits on its new head
	}
	return releaseDone, nil
}

// renewClaim extends this instance's claim on key every third of the TTL
// until done is closed.
func (p *Processor) renewClaim(ctx context.Context, key string, done <-chan struct{}) {
	t := time.NewTicker(max(p.claimTTL()/3, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		until := p.o.clock.Now().Add(p.claimTTL()).UnixMilli()
		_, _ = p.holds.update(ctx, key, func(h *api.Hold) (bool, error) {
			if h.Claim == nil || h.Claim.Owner != p.holds.owner {
				return false, errUnchanged
			}
			h.Claim.Until = until
			return false, nil
		})
	}
}

// headSucceeded starts the release of the hold whose head is the record
// of rec, a message that made it SUCCEEDED. The hold is found in the
// cache, else through the record (its function and aggregate).
func (p *Processor) headSucceeded(ctx context.Context, rec eventstore.Stream) error {
	id, key := rec.Aggregate.ID, ""
	if h, ok := p.holds.cache.byRecord(id); ok {
		key = h.Key()
	} else {
		st, _, err := p.readRecord(ctx, rec)
		if errors.Is(err, aggregate.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		f, ok := p.lookup(st.Function.ProcessorName, st.Function.Name)
		if st.Function.ContextName != p.context || !ok || !f.ordered {
			return nil
		}
		key = p.holdKey(f, st.EventID.AggregateID)
	}
	_, err := p.holds.update(ctx, key, func(h *api.Hold) (bool, error) {
		if h.Head.Record != id || h.Releasing {
			return false, errUnchanged
		}
		h.Releasing, h.Claim = true, nil
		return false, nil
	})
	if errors.Is(err, errNoHold) {
		return nil
	}
	return err
}
