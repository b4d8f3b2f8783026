// The lease holder's drain loop and its copy of the drains.

package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/amends-dev/amends/circuit"
)

// drains is the scheduler's copy of the drains: loaded from the bucket
// when a tenure begins (with partitions, when the partitions held
// change), written through after each change by the instance that leads
// the function's processor, read again each tick for the functions whose
// records it holds and does not lead.
type drains struct {
	mu     sync.Mutex
	tenure any // what the copy was loaded in: a tenure's context, or a Partitions.Changed channel
	byFn   map[circuit.Function]circuit.Drain
	open   map[circuit.Function]bool  // circuits not closed, as last seen
	ended  map[circuit.Function]int64 // the end of the last incident of each circuit, as last seen
	seen   bool                       // the circuits were read once
	// checked is when the bucket was last read for drains written by
	// another program (checkDrains).
	checked time.Time
	warned  map[string]bool // the refusals logged, each once
}

// drainCheckEvery is how often the lease holder reads the drains bucket
// for values it did not write.
const drainCheckEvery = time.Minute

// drainLoop advances the drains every tick until ctx ends.
func (s *Scheduler) drainLoop(ctx context.Context) {
	ticks := s.opts.drain.Ticks
	if ticks == nil {
		t := time.NewTicker(s.opts.drain.Policy.Tick)
		defer t.Stop()
		ticks = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			s.drainTick()
		}
	}
}

// drainTick advances every function's drain by what one tick does. It
// waits until the circuits and the records are loaded (a source with a
// Ready channel, as *circuit.Watcher and *projection.Index have): before
// that, an empty list would end a drain with records left, or take an
// open circuit for a closed one.
func (s *Scheduler) drainTick() {
	dc := s.opts.drain
	if !loaded(dc.Circuits) || !loaded(dc.Records) {
		return
	}
	states := dc.Circuits.List()
	open := make(map[circuit.Function]bool, len(states))
	ended := make(map[circuit.Function]int64, len(states))
	for _, c := range states {
		if c.Phase != circuit.Closed {
			open[c.Function] = true
		}
		if c.Incident.To != 0 {
			ended[c.Function] = c.Incident.To
		}
	}
	s.drain.mu.Lock()
	s.drain.open, s.drain.ended, s.drain.seen = open, ended, true
	s.drain.mu.Unlock()
	active := s.passing()
	if active == nil {
		return
	}
	epoch := s.drainEpoch(active)
	if !s.loadDrains(active, epoch) {
		return
	}
	now := s.opts.clock.Now()
	s.checkDrains(active, now)
	seen := map[circuit.Function]bool{}
	step := func(c circuit.State) bool {
		if !s.leads(c.Function.Processor) {
			s.followDrain(active, c)
			return true
		}
		if s.drainEpoch(active) != epoch {
			return false // the partitions changed: the next tick reads the drains again
		}
		if err := s.drainOne(active, c, now); err != nil && active.Err() == nil {
			s.opts.logger.Warn("scheduler: drain step failed; trying again", "function", c.Function.String(), "err", err)
		}
		return true
	}
	for _, c := range states {
		seen[c.Function] = true
		if s.passing() == nil || !step(c) {
			return
		}
	}
	// A circuit deleted from the bucket is closed, its incident over.
	for _, d := range s.drainList() {
		if !seen[d.Function] && d.Draining() {
			c := circuit.New(d.Function)
			c.Incident = circuit.Incident{From: d.From, To: max(d.To, d.From, 1)}
			if s.passing() == nil || !step(c) {
				return
			}
		}
	}
}

// drainEpoch is what the copy of the drains is good for: the tenure
// (active), or with partitions the partitions held now.
func (s *Scheduler) drainEpoch(active context.Context) any {
	if s.opts.partitions == nil {
		return active
	}
	return s.opts.partitions.Changed()
}

// followDrain reads again the drain of c's function when this instance
// holds some of its records and another leads its processor (a part of a
// split processor): its passes hold those records by the drain (drainHolds),
// which the other instance writes. A failed read keeps the copy.
func (s *Scheduler) followDrain(ctx context.Context, c circuit.State) {
	p := s.opts.partitions
	if p == nil || c.Phase != circuit.Closed || c.Incident.To == 0 || !p.HoldsAnyOf(c.Function.Processor) {
		return // an open circuit holds its records whatever the drain
	}
	if d, ok := s.drainOf(c.Function); ok && !d.Draining() && d.To >= c.Incident.To {
		return // done with this incident: only a later one starts it again
	}
	d, ok, err := s.opts.drain.Progress.Get(ctx, c.Function)
	if err != nil {
		return
	}
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	if s.drain.byFn == nil {
		return
	}
	if ok {
		s.drain.byFn[c.Function] = d
	} else {
		delete(s.drain.byFn, c.Function)
	}
}

// loaded reports whether src has loaded, when it can tell.
func loaded(src any) bool {
	r, ok := src.(interface{ Ready() <-chan struct{} })
	if !ok {
		return true
	}
	select {
	case <-r.Ready():
		return true
	default:
		return false
	}
}

// loadDrains reads the drains when epoch is new; false if it cannot.
func (s *Scheduler) loadDrains(tenure context.Context, epoch any) bool {
	s.drain.mu.Lock()
	loaded := s.drain.tenure == epoch
	s.drain.mu.Unlock()
	if loaded {
		return true
	}
	list, bad, err := s.opts.drain.Progress.List(tenure)
	if err != nil {
		s.opts.logger.Warn("scheduler: reading the drains failed; trying again", "err", err)
		return false
	}
	for _, e := range bad {
		s.opts.logger.Warn("scheduler: a stored drain does not validate; it starts again from its circuit's incident", "err", e)
	}
	byFn := make(map[circuit.Function]circuit.Drain, len(list))
	for _, d := range list {
		byFn[d.Function] = d
	}
	s.drain.mu.Lock()
	s.drain.tenure, s.drain.byFn = epoch, byFn
	s.drain.mu.Unlock()
	return true
}

// checkDrains reads the drains bucket every drainCheckEvery: the lease
// holder acts on its own copy and writes it over the stored one at each
// change, so a value another program wrote meanwhile is never acted on;
// one that does not validate is quarantined (by the bucket, once per
// revision) and logged here, as at a tenure's start, rather than found by
// drains list only.
func (s *Scheduler) checkDrains(tenure context.Context, now time.Time) {
	s.drain.mu.Lock()
	due := now.Sub(s.drain.checked) >= drainCheckEvery
	if due {
		s.drain.checked = now
	}
	s.drain.mu.Unlock()
	if !due {
		return
	}
	_, bad, err := s.opts.drain.Progress.List(tenure)
	if err != nil {
		return // read again at the next check
	}
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	if s.drain.warned == nil || len(s.drain.warned) > 1024 {
		s.drain.warned = map[string]bool{}
	}
	for _, e := range bad {
		if !s.drain.warned[e.Error()] {
			s.drain.warned[e.Error()] = true
			s.opts.logger.Warn("scheduler: a stored drain does not validate (quarantined); the scheduler keeps its own and writes it back at the drain's next change", "err", e)
		}
	}
}

func (s *Scheduler) drainList() []circuit.Drain {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	out := make([]circuit.Drain, 0, len(s.drain.byFn))
	for _, d := range s.drain.byFn {
		out = append(out, d)
	}
	return out
}

func (s *Scheduler) drainOf(f circuit.Function) (circuit.Drain, bool) {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	d, ok := s.drain.byFn[f]
	return d, ok
}

// putDrain stores d and keeps it.
func (s *Scheduler) putDrain(ctx context.Context, d circuit.Drain, now time.Time) error {
	d.UpdatedAt = now.UnixMilli()
	if err := s.opts.drain.Progress.Put(ctx, d); err != nil {
		return err
	}
	s.drain.mu.Lock()
	if s.drain.byFn != nil {
		s.drain.byFn[d.Function] = d
	}
	s.drain.mu.Unlock()
	return nil
}

// drainHolds reports whether the passes leave f's records alone: its
// circuit is not closed, or its drain waits or drains, or its circuit
// closed after an incident that no drain known here has taken up yet
// (the drain starts at the next tick of the instance that leads f's
// processor); or the circuits were not read yet, so that a pass at
// start-up prepares nothing the circuits would refuse.
func (s *Scheduler) drainHolds(f circuit.Function) bool {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	if !s.drain.seen || s.drain.open[f] {
		return true
	}
	d, ok := s.drain.byFn[f]
	to := s.drain.ended[f]
	return (ok && d.Draining()) || (to != 0 && (!ok || to > d.To))
}
