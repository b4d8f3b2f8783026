package scheduler

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
)

// The phases of a recovery drain.
const (
	// DrainWaiting: the function's circuit is open; its records wait (the
	// passes leave them alone) and the drain prepares the probe's replay
	// when no live event comes to probe.
	DrainWaiting = "waiting"
	// DrainCanary and DrainSteps: the circuit closed; the incident's
	// records are being prepared, a canary, then steps.
	DrainCanary = "canary"
	DrainSteps  = "steps"
	// DrainDone: no record of the incident is left to prepare.
	DrainDone = "done"
)

// Drain defaults.
const (
	DefaultDrainCanary    = 1
	DefaultDrainThreshold = 0.9
	// DefaultDrainRate is the most records per second a drain prepares for
	// one function: what the replay consumer of one instance sustains at
	// its default concurrency (4 replays at once) against a dependency that
	// answers in 20 ms. A drain never prepares faster than its steps
	// settle, so a slower dependency, or one replay consumer behind,
	// drains at its own pace below this; a faster one can be given more
	// (DrainPolicy.Rate, amends serve --drain-rate).
	DefaultDrainRate = 200.0
	// DefaultDrainTick is how often drains advance.
	DefaultDrainTick = 200 * time.Millisecond
	// DefaultProbeGrace is how long after a cool-down ends the drain waits
	// for a live event to probe the circuit before it prepares a replay
	// as the probe.
	DefaultProbeGrace = time.Second
	// minDrainRate is where halving stops.
	minDrainRate = 1.0
)

// DrainPolicy says how the records an outage left are prepared once the
// circuit closes: Canary records first, then steps that double while at
// least Threshold of the last one succeeded, up to Rate records per
// second (and the room in the replay consumer, DrainConfig.Capacity); a
// step below the threshold halves the step and the rate, and a canary
// below it opens the circuit again. Zero fields take the defaults.
type DrainPolicy struct {
	Canary     int
	Threshold  float64
	Rate       float64
	Tick       time.Duration
	ProbeGrace time.Duration
}

// CircuitSource gives the circuits; *circuit.Watcher satisfies it (Run it
// beside the scheduler).
type CircuitSource interface {
	List() []circuit.State
}

var _ CircuitSource = (*circuit.Watcher)(nil)

// ReplayCapacity tells how many more replays the replay consumer of a
// context can take now (its MaxAckPending less what it holds and what
// waits for it); a drain step is no larger. An error or a negative answer
// means none.
type ReplayCapacity func(ctx context.Context, context string) (int, error)

// DrainConfig is what the recovery drains need (WithDrains).
type DrainConfig struct {
	// Circuits are the functions' circuits (required).
	Circuits CircuitSource
	// Store, if set, lets a failed canary open the circuit again; the
	// cool-down is CircuitPolicy's (circuit.DefaultPolicy if zero).
	Store         *circuit.Store
	CircuitPolicy circuit.Policy
	// Records reads the records (projection.Index, required).
	Records RecordLister
	// Progress keeps the drains' progress (required; OpenDrains).
	Progress *Drains
	Policy   DrainPolicy
	// Capacity, if set, bounds each step by the room in the replay
	// consumer.
	Capacity ReplayCapacity
	// Ticks, if set, advance the drains instead of every Policy.Tick
	// (tests).
	Ticks <-chan time.Time
}

// WithDrains makes the lease holder run the recovery drains of the
// circuits in c (see the package documentation, "Circuits and recovery
// drains"). Invalid settings return an error wrapping ErrInvalidOption.
func WithDrains(c DrainConfig) Option {
	return func(o *options) error {
		if c.Circuits == nil || c.Records == nil || c.Progress == nil {
			return fmt.Errorf("drains need the circuits, a record lister and a progress bucket: %w", ErrInvalidOption)
		}
		p := &c.Policy
		if p.Canary == 0 {
			p.Canary = DefaultDrainCanary
		}
		if p.Threshold == 0 {
			p.Threshold = DefaultDrainThreshold
		}
		if p.Rate == 0 {
			p.Rate = DefaultDrainRate
		}
		if p.Tick == 0 {
			p.Tick = DefaultDrainTick
		}
		if p.ProbeGrace == 0 {
			p.ProbeGrace = DefaultProbeGrace
		}
		switch {
		case p.Canary < 1 || p.Canary > MaxReleaseBatch:
			return fmt.Errorf("drain canary must be between 1 and %d records, got %d: %w", MaxReleaseBatch, p.Canary, ErrInvalidOption)
		case !(p.Threshold > 0 && p.Threshold <= 1):
			return fmt.Errorf("drain threshold must be a fraction above 0 and at most 1, got %v: %w", p.Threshold, ErrInvalidOption)
		case math.IsNaN(p.Rate) || p.Rate < minDrainRate || p.Rate > MaxDrainRate:
			return fmt.Errorf("drain rate must be from %v to %d records/s, got %v: %w", minDrainRate, MaxDrainRate, p.Rate, ErrInvalidOption)
		case p.Tick < 10*time.Millisecond || p.Tick > time.Minute:
			return fmt.Errorf("drain tick must be from 10ms to 1m, got %s: %w", p.Tick, ErrInvalidOption)
		case p.ProbeGrace < 0 || p.ProbeGrace > time.Hour:
			return fmt.Errorf("drain probe grace must be from 0 to 1h, got %s: %w", p.ProbeGrace, ErrInvalidOption)
		}
		if !c.CircuitPolicy.Off {
			cp, err := c.CircuitPolicy.Resolve()
			if err != nil {
				return fmt.Errorf("drains: %w: %w", err, ErrInvalidOption)
			}
			c.CircuitPolicy = cp
		}
		o.drain = &c
		return nil
	}
}

// Drain is the progress of the recovery drain of one function's records,
// as the drains bucket keeps it (one key per function), so that it
// survives a restart. Times are epoch ms.
type Drain struct {
	Function circuit.Function `json:"function"`
	Phase    string           `json:"phase"`
	// From and To are the incident drained: the records of the function
	// that failed within it, or whose errorCode is CircuitOpen, and that
	// have an automatic retry left. To is 0 while waiting.
	From int64 `json:"from"`
	To   int64 `json:"to,omitempty"`
	// StartedAt is when the circuit closed and the drain began.
	StartedAt int64 `json:"startedAt,omitempty"`
	// Size is the records of the next step; Rate the records per second
	// it may prepare now.
	Size int     `json:"size,omitempty"`
	Rate float64 `json:"rate,omitempty"`
	// Steps counts the steps (the canary included) judged.
	Steps int `json:"steps"`
	// Batch is the step under way, prepared at BatchAt; the next begins
	// no sooner than NextAt.
	Batch   []ReleasedRecord `json:"batch,omitempty"`
	BatchAt int64            `json:"batchAt,omitempty"`
	NextAt  int64            `json:"nextAt,omitempty"`
	// Probe is the replay last prepared as the circuit's probe, at
	// ProbeAt; Probes counts them.
	Probe   *ReleasedRecord `json:"probe,omitempty"`
	ProbeAt int64           `json:"probeAt,omitempty"`
	Probes  int             `json:"probes"`
	// Released, Succeeded and Failed count the records of the steps
	// judged.
	Released  int    `json:"released"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
	Note      string `json:"note,omitempty"`
	DoneAt    int64  `json:"doneAt,omitempty"`
	UpdatedAt int64  `json:"updatedAt"`
}

// Draining reports whether the drain holds its function's records from
// the scheduler's passes: while it waits or drains.
func (d Drain) Draining() bool { return d.Phase != DrainDone }

// DrainStats counts what the drains did.
type DrainStats struct {
	Started, Steps, Prepared, Probes, Halved, Reopened, Done uint64
}

type drainStats struct{ started, steps, prepared, probes, halved, reopened, done atomic.Uint64 }

func (d *drainStats) load() DrainStats {
	return DrainStats{Started: d.started.Load(), Steps: d.steps.Load(), Prepared: d.prepared.Load(), Probes: d.probes.Load(),
		Halved: d.halved.Load(), Reopened: d.reopened.Load(), Done: d.done.Load()}
}

// drains is the lease holder's copy of the drains: loaded from the bucket
// when a tenure begins, written through after each change.
type drains struct {
	mu     sync.Mutex
	tenure context.Context
	byFn   map[circuit.Function]Drain
	open   map[circuit.Function]bool // circuits not closed, as last seen
	seen   bool                      // the circuits were read once
	// wrote holds the circuits the drain changed itself (a failed canary
	// opens its circuit again), as stored, until the watched circuits
	// catch up: a tick that read the circuit from before would take it
	// for closed and prepare a canary its processor refuses.
	wrote map[circuit.Function]circuit.State
}

// transitions is the number of c's last transition (transitions are
// numbered from 1, in order), 0 for a circuit that never changed.
func transitions(c circuit.State) int64 {
	t, _ := c.LastTransition()
	return t.Seq
}

// circuits returns the watched circuits, each replaced by the one the
// drain wrote when that is newer.
func (s *Scheduler) circuits(watched []circuit.State) []circuit.State {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	for i, c := range watched {
		w, ok := s.drain.wrote[c.Function]
		switch {
		case !ok:
		case transitions(w) > transitions(c):
			watched[i] = w
		default:
			delete(s.drain.wrote, c.Function) // the watch has it
		}
	}
	return watched
}

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
	states := s.circuits(dc.Circuits.List())
	open := make(map[circuit.Function]bool, len(states))
	for _, c := range states {
		if c.Phase != circuit.Closed {
			open[c.Function] = true
		}
	}
	s.drain.mu.Lock()
	s.drain.open, s.drain.seen = open, true
	s.drain.mu.Unlock()
	active := s.holding()
	if active == nil {
		return
	}
	if !s.loadDrains(active) {
		return
	}
	now := s.opts.clock.Now()
	seen := map[circuit.Function]bool{}
	for _, c := range states {
		if s.holding() == nil {
			return
		}
		seen[c.Function] = true
		if err := s.drainOne(active, c, now); err != nil && active.Err() == nil {
			s.opts.logger.Warn("scheduler: drain step failed; trying again", "function", c.Function.String(), "err", err)
		}
	}
	// A circuit deleted from the bucket is closed, its incident over.
	for _, d := range s.drainList() {
		if !seen[d.Function] && d.Draining() {
			c := circuit.New(d.Function)
			c.Incident = circuit.Incident{From: d.From, To: max(d.To, d.From, 1)}
			if err := s.drainOne(active, c, now); err != nil && active.Err() == nil {
				s.opts.logger.Warn("scheduler: drain step failed; trying again", "function", d.Function.String(), "err", err)
			}
		}
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

// loadDrains reads the drains when tenure is new; false if it cannot.
func (s *Scheduler) loadDrains(tenure context.Context) bool {
	s.drain.mu.Lock()
	loaded := s.drain.tenure == tenure
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
	byFn := make(map[circuit.Function]Drain, len(list))
	for _, d := range list {
		byFn[d.Function] = d
	}
	s.drain.mu.Lock()
	s.drain.tenure, s.drain.byFn = tenure, byFn
	s.drain.mu.Unlock()
	return true
}

func (s *Scheduler) drainList() []Drain {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	out := make([]Drain, 0, len(s.drain.byFn))
	for _, d := range s.drain.byFn {
		out = append(out, d)
	}
	return out
}

func (s *Scheduler) drainOf(f circuit.Function) (Drain, bool) {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	d, ok := s.drain.byFn[f]
	return d, ok
}

// putDrain stores d and keeps it.
func (s *Scheduler) putDrain(ctx context.Context, d Drain, now time.Time) error {
	d.UpdatedAt = now.UnixMilli()
	if err := s.opts.drain.Progress.put(ctx, d); err != nil {
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
// circuit is not closed, or its drain waits or drains; or the circuits
// were not read yet, so that a pass at start-up prepares nothing the
// circuits would refuse.
func (s *Scheduler) drainHolds(f circuit.Function) bool {
	s.drain.mu.Lock()
	defer s.drain.mu.Unlock()
	if !s.drain.seen || s.drain.open[f] {
		return true
	}
	d, ok := s.drain.byFn[f]
	return ok && d.Draining()
}

// drainOne moves the drain of c's function on by one tick at most.
func (s *Scheduler) drainOne(ctx context.Context, c circuit.State, now time.Time) error {
	d, ok := s.drainOf(c.Function)
	ms := now.UnixMilli()
	if c.Phase != circuit.Closed {
		switch {
		case !ok || d.Phase == DrainDone:
			d = Drain{Function: c.Function, Phase: DrainWaiting, From: incidentFrom(c, ms), Probes: d.Probes,
				Note: fmt.Sprintf("the circuit opened at %s; its records wait for it to close", stamp(c.Since))}
			s.opts.logger.Info("scheduler: a circuit opened; its function's records wait for the recovery drain", "function", c.Function.String())
			if err := s.putDrain(ctx, d, now); err != nil {
				return err
			}
		case d.Phase == DrainCanary || d.Phase == DrainSteps:
			s.judgeAborted(&d, now)
			d.Phase, d.To, d.Batch, d.NextAt = DrainWaiting, 0, nil, 0
			d.Note = fmt.Sprintf("the circuit opened again at %s while draining; waiting for it to close", stamp(c.Since))
			s.opts.logger.Warn("scheduler: a circuit opened again during its recovery drain; the drain waits", "function", c.Function.String(),
				"released", d.Released, "succeeded", d.Succeeded, "failed", d.Failed)
			if err := s.putDrain(ctx, d, now); err != nil {
				return err
			}
		case c.Incident.From != 0 && c.Incident.From < d.From:
			d.From = c.Incident.From
			if err := s.putDrain(ctx, d, now); err != nil {
				return err
			}
		}
		return s.probe(ctx, c, d, now)
	}
	if c.Incident.To == 0 {
		return nil // never had an incident
	}
	switch {
	case !ok, d.Phase == DrainWaiting, d.Phase == DrainDone && c.Incident.To > d.To:
		from := c.Incident.From
		if ok && d.Phase == DrainWaiting && d.From != 0 {
			from = min(from, d.From)
		}
		d = Drain{Function: c.Function, Phase: DrainCanary, From: from, To: c.Incident.To, StartedAt: ms,
			Size: s.opts.drain.Policy.Canary, Rate: s.opts.drain.Policy.Rate, Probes: d.Probes,
			Note: fmt.Sprintf("the circuit closed at %s; draining the records of %s to %s, a canary first", stamp(c.Incident.To), stamp(from), stamp(c.Incident.To))}
		s.drainStats.started.Add(1)
		s.opts.logger.Info("scheduler: the circuit closed; draining its function's records of the incident, a canary first", "function", c.Function.String(),
			"from", time.UnixMilli(from).UTC(), "to", time.UnixMilli(c.Incident.To).UTC(), "rate", d.Rate)
		if err := s.putDrain(ctx, d, now); err != nil {
			return err
		}
	case d.Phase == DrainDone:
		return nil
	case c.Incident.To > d.To:
		d.From, d.To = min(d.From, c.Incident.From), c.Incident.To // a replay reported a later incident while draining
	}
	return s.advanceDrain(ctx, d, now)
}

func incidentFrom(c circuit.State, ms int64) int64 {
	if c.Incident.From != 0 {
		return c.Incident.From
	}
	return ms
}

// judgeAborted counts the records of d's batch that have an outcome, the
// batch being given up.
func (s *Scheduler) judgeAborted(d *Drain, now time.Time) {
	for _, r := range d.Batch {
		switch outcome(s.opts.drain.Records, r, now) {
		case outcomeSucceeded:
			d.Released++
			d.Succeeded++
		case outcomeFailed:
			d.Released++
			d.Failed++
		}
	}
}

// advanceDrain judges d's step under way, or prepares the next one, or
// ends d when no record is left.
func (s *Scheduler) advanceDrain(ctx context.Context, d Drain, now time.Time) error {
	dc := s.opts.drain
	pol := dc.Policy
	ms := now.UnixMilli()
	if len(d.Batch) > 0 {
		pending, ok, failed := settleBatch(dc.Records, d.Batch, now)
		if pending {
			return nil
		}
		n := len(d.Batch)
		d.Released += n
		d.Succeeded += len(ok)
		d.Failed += len(failed)
		d.Steps++
		d.Batch = nil
		s.drainStats.steps.Add(1)
		ratio := float64(len(ok)) / float64(n)
		what := "canary"
		if d.Phase == DrainSteps {
			what = fmt.Sprintf("step %d", d.Steps)
		}
		switch {
		case ratio >= pol.Threshold:
			d.Phase = DrainSteps
			d.Size = min(2*d.Size, maxStep(d.Rate))
			d.Note = fmt.Sprintf("the %s succeeded for %d of %d records; the next step prepares %d", what, len(ok), n, d.Size)
		case d.Size > pol.Canary:
			d.Size = max(pol.Canary, d.Size/2)
			d.Rate = max(minDrainRate, d.Rate/2)
			s.drainStats.halved.Add(1)
			d.Note = fmt.Sprintf("the %s succeeded for %d of %d records (%.0f%%), below %.0f%%; halved to %d records, %.0f records/s",
				what, len(ok), n, 100*ratio, 100*pol.Threshold, d.Size, d.Rate)
			s.opts.logger.Warn("scheduler: a drain step failed; halving the drain", "function", d.Function.String(), "succeeded", len(ok), "of", n,
				"size", d.Size, "rate", d.Rate)
		default:
			reason := fmt.Sprintf("the recovery drain's %s succeeded for %d of %d records (%.0f%%), below %.0f%%", what, len(ok), n, 100*ratio, 100*pol.Threshold)
			d.Phase, d.To, d.NextAt = DrainWaiting, 0, 0
			d.Note = reason + "; the circuit is opened again"
			s.drainStats.reopened.Add(1)
			s.opts.logger.Warn("scheduler: the drain's canary failed; opening the circuit again", "function", d.Function.String(), "reason", reason)
			if dc.Store != nil {
				c, _, _, err := dc.Store.Update(ctx, d.Function, func(c circuit.State) (circuit.State, bool) {
					return c.DrainFailed(now, dc.CircuitPolicy, len(failed), n, reason, rand.Float64())
				})
				if err != nil {
					return err
				}
				s.drain.mu.Lock()
				if s.drain.wrote == nil {
					s.drain.wrote = map[circuit.Function]circuit.State{}
				}
				s.drain.wrote[d.Function] = c
				s.drain.mu.Unlock()
			}
		}
		return s.putDrain(ctx, d, now)
	}
	if ms < d.NextAt {
		return nil
	}
	size := d.Size
	if dc.Capacity != nil {
		room, err := dc.Capacity(ctx, d.Function.Context)
		if err != nil || room < 1 {
			// No room in the replay consumer (or none runs): the next tick
			// asks again; the note says why the drain waits.
			note := "waiting for room in the replay consumer of context " + d.Function.Context
			if err != nil {
				note += ": " + err.Error()
			}
			if note = clipNote(note); d.Note != note {
				d.Note = note
				return s.putDrain(ctx, d, now)
			}
			return nil
		}
		size = min(size, room)
	}
	items, err := s.drainRecords(d, size)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		d.Phase, d.DoneAt, d.Size, d.NextAt = DrainDone, ms, 0, 0
		d.Note = fmt.Sprintf("drained: %d records released, %d succeeded, %d failed", d.Released, d.Succeeded, d.Failed)
		s.drainStats.done.Add(1)
		s.opts.logger.Info("scheduler: recovery drain done", "function", d.Function.String(), "released", d.Released, "succeeded", d.Succeeded,
			"failed", d.Failed, "steps", d.Steps, "took", time.Duration(ms-d.StartedAt)*time.Millisecond)
		return s.putDrain(ctx, d, now)
	}
	label := "canary"
	if d.Phase == DrainSteps {
		label = fmt.Sprintf("step %d", d.Steps+1)
	}
	batch, perr := s.prepareAll(ctx, items, aggregate.PrepareCompensation{}, func(it projection.Item) aggregate.Meta {
		return aggregate.Meta{Actor: Actor, Reason: fmt.Sprintf("recovery drain of %s after the outage of %s to %s: %s", d.Function, stamp(d.From), stamp(d.To), label),
			CommandID: fmt.Sprintf("drain:%s:%d:%d", it.ID, it.Retries, d.StartedAt)}
	})
	s.drainStats.prepared.Add(uint64(len(batch)))
	if len(batch) == 0 {
		return perr // every pick moved on (the next tick picks again), or none could be sent
	}
	d.Batch, d.BatchAt = batch, ms
	d.NextAt = ms + int64(math.Ceil(float64(len(batch))/d.Rate*1000))
	if err := s.putDrain(ctx, d, now); err != nil {
		return err
	}
	return perr
}

// maxStep is the largest step at rate: a second's worth, at most
// MaxReleaseBatch.
func maxStep(rate float64) int {
	return max(1, min(MaxReleaseBatch, int(math.Ceil(rate))))
}

// drainRecords lists up to n records d drains, oldest failure first: FAILED
// records of its function with an automatic retry left (RECOVERABLE or
// UNKNOWN, retries below the limit) whose errorCode is CircuitOpen or
// whose last failure is within [From, To].
func (s *Scheduler) drainRecords(d Drain, n int) ([]projection.Item, error) {
	q := projection.Query{
		Filter: projection.Filter{FunctionContext: d.Function.Context, Processor: d.Function.Processor, Function: d.Function.Name, Status: aggregate.StatusFailed},
		Sort:   projection.Sort{Field: projection.SortExecuteAt},
		Limit:  projection.MaxLimit,
	}
	var out []projection.Item
	for len(out) < n {
		page, err := s.opts.drain.Records.List(q)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			if len(out) < n && drained(d, it) {
				out = append(out, it)
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	return out, nil
}

func drained(d Drain, it projection.Item) bool {
	if !it.Recoverable.AutoRetried() || it.Retries >= it.MaxRetries {
		return false
	}
	return it.ErrorCode == circuit.ErrorCode || (it.ExecuteAt >= d.From && it.ExecuteAt <= d.To)
}

// probe prepares the replay of c's oldest record as its probe, when the
// cool-down passed a grace ago and no call claimed the probe (or, half-open,
// no call took the next probe), and the last probe it prepared has an
// outcome.
func (s *Scheduler) probe(ctx context.Context, c circuit.State, d Drain, now time.Time) error {
	pol := s.opts.drain.Policy
	ms := now.UnixMilli()
	grace := pol.ProbeGrace.Milliseconds()
	switch {
	case c.Forced:
		return nil
	case c.Phase == circuit.Open && ms < c.Until+grace:
		return nil
	case c.Phase == circuit.HalfOpen && !c.Probeable(now):
		return nil
	case c.Phase == circuit.Open && d.ProbeAt != 0 && ms < d.ProbeAt+grace:
		return nil // the last probe failed a moment ago: the circuit's cool-down paces the next
	case d.Probe != nil && outcome(s.opts.drain.Records, *d.Probe, now) == outcomePending:
		return nil
	}
	probe := Drain{Function: c.Function, From: 0, To: math.MaxInt64}
	items, err := s.drainRecords(probe, 1)
	if err != nil || len(items) == 0 {
		return err
	}
	it := items[0]
	batch, err := s.prepareAll(ctx, items, aggregate.PrepareCompensation{}, func(projection.Item) aggregate.Meta {
		return aggregate.Meta{Actor: Actor, Reason: fmt.Sprintf("probe of the circuit of %s, open since %s", c.Function, stamp(c.Since)),
			CommandID: fmt.Sprintf("circuit-probe:%s:%d", it.ID, it.Retries)}
	})
	if len(batch) == 0 {
		return err
	}
	d.Probe, d.ProbeAt = &batch[0], ms
	d.Probes++
	s.drainStats.probes.Add(1)
	s.opts.logger.Info("scheduler: no call probed the circuit after its cool-down; replaying its oldest record as the probe",
		"function", c.Function.String(), "record", it.ID)
	return s.putDrain(ctx, d, now)
}

func clipNote(s string) string {
	if len(s) <= 300 {
		return s
	}
	n := 300
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "..."
}

func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// ReplayRoom returns the ReplayCapacity of the replay consumers on the
// compensation stream stream of js (jsstore.Store.StreamName of
// aggregate.Context): the consumer's MaxAckPending less the messages it
// holds and those waiting for it. A context without a replay consumer has
// no room: its replays would not run.
func ReplayRoom(js jetstream.JetStream, stream string) ReplayCapacity {
	return func(ctx context.Context, context string) (int, error) {
		c, err := js.Consumer(ctx, stream, processor.ReplayDurableName(context))
		if err != nil {
			return 0, err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return 0, err
		}
		return info.Config.MaxAckPending - info.NumAckPending - int(min(info.NumPending, 1<<30)), nil
	}
}
