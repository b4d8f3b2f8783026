package processor

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
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

// releaseChunk is how many held events one claim takes: they are given to
// the function one at a time, and removed from the hold in one write after
// the chunk, so that a large hold is not rewritten after every event.
const releaseChunk = 64

// releaseWriteTimeout bounds the write that removes a chunk's released
// events from the hold, which also runs when the processor stops.
const releaseWriteTimeout = 5 * time.Second

// release gives the held events of f's hold key to f in version order,
// one at a time, a chunk per claim (renewed while it runs), each removed
// from the hold only after f succeeded on it (the chunk's in one write). A
// failure is recorded and becomes the new head; the hold then waits
// again. It returns when the hold is empty (and deleted), waits, is
// claimed by another instance, or the processor stops (the held events of
// the chunk not yet removed run again on the next claim).
func (p *Processor) release(stopping, work context.Context, f *function, key string) {
	rt := p.holds
	log := p.o.logger.With("context", p.context, "processor", f.info.ProcessorName, "function", f.info.Name, "key", key)
	for stopping.Err() == nil {
		var refs []HeldEvent
		var head string
		var a aggregate.WireAggregateID
		empty := false
		now := p.o.clock.Now()
		_, err := rt.update(work, key, func(h *Hold) (bool, error) {
			switch {
			case !h.Releasing:
				return false, errNotReleasing
			case h.Claim != nil && h.Claim.Owner != rt.owner && h.Claim.Until > now.UnixMilli():
				return false, errClaimed
			case len(h.Held) == 0:
				empty = true
				return true, nil
			}
			h.Claim = &HoldClaim{Owner: rt.owner, Until: now.Add(p.claimTTL()).UnixMilli()}
			refs, head = slices.Clone(h.Held[:min(len(h.Held), releaseChunk)]), h.Head.Record
			a = aggregate.WireAggregateID{ContextName: h.Context, AggregateName: h.AggregateType, AggregateID: h.AggregateID, TenantID: aggregate.DefaultTenantID}
			return false, nil
		})
		switch {
		case errors.Is(err, errNotReleasing), errors.Is(err, errClaimed), errors.Is(err, errNoHold):
			return
		case err != nil:
			log.Warn("amends processor: cannot claim the release; retrying", "err", err)
			_ = Sleep(stopping, p.o.nakDelay)
			continue
		case empty:
			log.Debug("amends processor: hold released")
			return
		}
		if !p.releaseRefs(stopping, work, f, key, head, a, refs, log) {
			return
		}
	}
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
// then removes from the hold, in one write, those handled (and sets the new
// head of a recorded failure). It returns false when the release must
// stop (a new head, stopped, the write failed).
func (p *Processor) releaseRefs(stopping, work context.Context, f *function, key, head string, a aggregate.WireAggregateID, refs []HeldEvent, log *slog.Logger) bool {
	rt := p.holds
	renewed := make(chan struct{})
	var renew sync.WaitGroup
	renew.Go(func() { p.renewClaim(work, key, renewed) })
	done := make(map[string]bool, len(refs))
	var newHead *HoldHead
	cont := true
loop:
	for _, ref := range refs {
		step, h := p.releaseOne(stopping, work, f, head, a, ref, log)
		switch step {
		case releaseDone:
			done[ref.EventID] = true
		case releaseNewHead:
			done[ref.EventID], newHead, cont = true, h, false
			break loop
		case releaseAgain:
			break loop // the chunk's rest waits for the next claim
		case releaseStop:
			cont = false
			break loop
		}
	}
	close(renewed)
	renew.Wait()
	if len(done) == 0 {
		return cont
	}
	// What was released is written even when the processor is stopping,
	// so that it does not run again on the next claim.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(work), releaseWriteTimeout)
	defer cancel()
	_, err := rt.update(wctx, key, func(h *Hold) (bool, error) {
		n := len(h.Held)
		h.Held = slices.DeleteFunc(h.Held, func(r HeldEvent) bool { return done[r.EventID] })
		if newHead != nil {
			h.Head = *newHead
			h.Releasing, h.Claim, h.Released = false, nil, nil
		} else if len(h.Held) == n {
			return false, errUnchanged
		}
		return false, nil
	})
	if err != nil && !errors.Is(err, errNoHold) {
		log.Warn("amends processor: cannot record the released events in the hold; they run again on the next claim", "err", err)
		return false
	}
	return cont && err == nil
}

// releaseOne runs f on held event ref and says what became of it; with
// releaseNewHead, the head of its recorded failure.
func (p *Processor) releaseOne(stopping, work context.Context, f *function, head string, a aggregate.WireAggregateID, ref HeldEvent, log *slog.Logger) (releaseStep, *HoldHead) {
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
	err = p.execute(WithCompensation(work, Compensation{ID: head, Release: true}), f, d, false)
	if err != nil && work.Err() != nil {
		return releaseStop, nil // interrupted: the next claim runs it again
	}
	if err == nil {
		f.stats.Released.Add(1)
		return releaseDone, nil
	}
	out := p.record(work, p.execution(f, d, nil, err))
	if out == OutcomeRecordingFailed {
		_ = Sleep(stopping, p.o.nakDelay)
		return releaseAgain, nil // the same event again
	}
	f.stats.Released.Add(1)
	if out == OutcomeRecorded || out == OutcomeAlreadyRecorded {
		h := headOf(f, d.EventID(), p.o.clock.Now().UnixMilli())
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
		_, _ = p.holds.update(ctx, key, func(h *Hold) (bool, error) {
			if h.Claim == nil || h.Claim.Owner != p.holds.owner {
				return false, errUnchanged
			}
			h.Claim.Until = until
			return false, nil
		})
	}
}

// headSucceeded starts the release of the hold whose head is record id,
// which has just become SUCCEEDED. The hold is found in the cache, else
// through the record (its function and aggregate).
func (p *Processor) headSucceeded(ctx context.Context, id string, version uint64) error {
	key := ""
	if h, ok := p.holds.cache.byRecord(id); ok {
		key = h.Key()
	} else {
		st, _, err := p.readRecord(ctx, id, version)
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
	_, err := p.holds.update(ctx, key, func(h *Hold) (bool, error) {
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
