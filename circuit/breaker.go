package circuit

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// writeTimeout bounds a write of the bucket made on a call's path.
const writeTimeout = 2 * time.Second

// Breaker is one instance's view of one function's circuit: it decides
// whether a call goes through (Allow) and counts its outcome (Done),
// opening the circuit when the outcomes cross the policy's thresholds.
// Every change goes to the shared bucket with compare-and-set and is
// logged with the numbers that caused it; what other instances change
// comes back through the Set's watch. If the bucket cannot be written, the
// change is applied here alone, and the next change read from the bucket
// replaces it. Safe for concurrent use.
type Breaker struct {
	f   Function
	p   Policy
	set *Set
	win *window

	// closed mirrors state.Phase == Closed (or the policy is off): the
	// lock-free path of the usual call.
	closed atomic.Bool
	// failingSince is the first failure of a streak of at least half of
	// ConsecutiveFailures distinct events since the last Recovered (ms),
	// 0 if none: a blip of the dependency too short to open the circuit.
	failingSince atomic.Int64
	refused      atomic.Int64

	mu       sync.Mutex
	state    State
	rev      uint64 // of state in the bucket; 0 if it came from nowhere
	claiming bool   // a probe claim is under way on this instance
	tripping bool   // a trip is being written
}

// Call is what a breaker judges a call by: the distinct event it is for,
// that event's aggregate, and, for a replay, its record and whether the
// record already failed for a real reason (Known). Each string is empty
// when unknown: a call without an event is counted as a distinct one.
type Call struct {
	// Event is the id of the event the call is for.
	Event string
	// Aggregate names the event's aggregate (any stable key of it).
	Aggregate string
	// Record is the id of the record a replay runs for.
	Record string
	// Known reports a replay of a record whose last call failed for a
	// real reason (not a refusal): its failure is no news about the
	// dependency, so it is not counted, and it never probes unless the
	// scheduler or an operator chose its record as the probe.
	Known bool
}

// Ticket is what Allow let through: an ordinary call, or the probe.
type Ticket struct {
	probe string
	call  Call
}

// Probe reports whether the call is the circuit's probe.
func (t Ticket) Probe() bool { return t.probe != "" }

// Function returns the breaker's function.
func (b *Breaker) Function() Function { return b.f }

// Policy returns the breaker's policy.
func (b *Breaker) Policy() Policy { return b.p }

// State returns the circuit as this instance last saw it.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// Passing reports whether calls go through now (the circuit is closed, or
// off).
func (b *Breaker) Passing() bool { return b.closed.Load() }

// Closed is Passing.
//
// Deprecated: use Passing; Closed() is the name of a channel closed at
// the end elsewhere (processor.Processor.Closed). It goes in the next
// release.
func (b *Breaker) Closed() bool { return b.Passing() }

// Failing reports whether this instance saw a streak of failures of at
// least half of ConsecutiveFailures distinct events since the last
// recovery it reported: the next success then reports one (an incident to
// drain, a Recovery). Failures that successes interleave (events that
// fail for their own reason) never do.
func (b *Breaker) Failing() bool { return b.failingSince.Load() != 0 }

// Allow decides whether call c of the function at now goes through: yes
// while the circuit is closed; while it is not, only as the probe: the
// replay of the record the scheduler or an operator chose as the probe,
// or, once the cool-down passed, a call of an event that may probe (not
// Known, not already a successful probe) after this instance claimed the
// probe in the bucket (one round trip). Otherwise it returns the refusal,
// an *OpenError, and counts the refused call.
func (b *Breaker) Allow(ctx context.Context, now time.Time, c Call) (Ticket, *OpenError) {
	if b.closed.Load() {
		return Ticket{call: c}, nil
	}
	b.mu.Lock()
	st := b.state
	if st.Phase == Closed {
		b.mu.Unlock()
		return Ticket{call: c}, nil
	}
	if pr, ok := st.ProbeOf(now, c.Record); ok {
		b.mu.Unlock()
		return Ticket{probe: pr.ID, call: c}, nil
	}
	if c.Record != "" && b.set.store != nil {
		// A replay while the circuit is not closed may be the probe the
		// scheduler or an operator chose a moment ago, which the watch has
		// not brought yet: read the circuit once more before refusing it.
		b.mu.Unlock()
		st = b.refresh(ctx)
		b.mu.Lock()
		if pr, ok := st.ProbeOf(now, c.Record); ok {
			b.mu.Unlock()
			return Ticket{probe: pr.ID, call: c}, nil
		}
		if st.Phase == Closed {
			b.mu.Unlock()
			return Ticket{call: c}, nil
		}
	}
	if c.Known || !st.Probeable(now) || b.claiming || (c.Event != "" && slices.Contains(st.Probed, c.Event)) {
		b.mu.Unlock()
		b.refused.Add(1)
		return Ticket{}, openError(st)
	}
	b.claiming = true
	b.mu.Unlock()
	claim := Claim{Instance: b.set.instance, ID: uuid.NewString(), Event: c.Event}
	n, changed := b.change(ctx, func(cur State) (State, bool) { return Evolve(cur, now, b.p, claim) })
	b.mu.Lock()
	b.claiming = false
	b.mu.Unlock()
	if changed && n.Probe != nil && n.Probe.ID == claim.ID {
		if st.Phase == Open {
			b.log(slog.LevelInfo, "circuits: the cool-down passed; the next call is the probe", n, "coolDown", time.Duration(st.CoolDownMs)*time.Millisecond)
		}
		return Ticket{probe: claim.ID, call: c}, nil
	}
	b.refused.Add(1)
	return Ticket{}, openError(n)
}

// Outcome is how a call went, for Done.
type Outcome struct {
	// Err is the call's error; nil on success.
	Err error
	// Counted reports that the failure counts towards opening: the
	// function's classification calls it RECOVERABLE or UNKNOWN. A failure
	// that does not count is, for the circuit, an answer of a live
	// dependency.
	Counted bool
	// Last describes the failure for the refused calls' records; called
	// only when the circuit opens or a probe fails.
	Last func() Failure
	// Pending reports a failure with immediate retries to come: the
	// execution goes on, and its last call tells how it ended. It counts
	// towards the streak (a dead dependency fails every first call), not
	// the ratio, which weighs executions that ended.
	Pending bool
}

// Done counts the outcome at now of a call Allow let through with t:
// a probe's success or failure moves the circuit on (closed after the
// policy's successes of distinct events, open again after its probe
// failures); an ordinary call's failure that counts may trip it. A failure
// that does not count (UNRECOVERABLE, or of a Known replay) is, for the
// circuit, neither a success nor a failure; nor is a failure of an event
// already counted in the window, or of an aggregate past its share.
func (b *Breaker) Done(ctx context.Context, now time.Time, t Ticket, o Outcome) {
	if b.p.Off {
		return
	}
	// A Known replay's failure counts only as the probe it was chosen to be.
	failed := o.Err != nil && o.Counted && (!t.call.Known || t.Probe())
	if t.Probe() {
		b.probeDone(ctx, now, t, failed, o)
		return
	}
	if o.Err != nil && !failed {
		return
	}
	if !failed {
		b.win.success(now)
		if b.failingSince.Load() != 0 {
			b.recovered(ctx, now)
		}
		return
	}
	counted, consecutive, calls, failures, since := b.win.failure(now, t.call, o.Pending)
	if !counted {
		return
	}
	if consecutive >= max(2, b.p.ConsecutiveFailures/2) {
		b.failingSince.CompareAndSwap(0, since)
	}
	b.mu.Lock()
	cause, trip := trips(b.p, consecutive, calls, failures)
	if !trip || b.state.Phase != Closed || b.tripping {
		b.mu.Unlock()
		return
	}
	b.tripping = true
	b.mu.Unlock()
	last := failureOf(now, o)
	tr := Trip{Cause: cause, Failures: consecutive, Calls: int(calls), Last: last, FirstFailureAt: since, Instance: b.set.instance, Jitter: rand.Float64()}
	if cause == CauseRatio {
		tr.Failures = int(failures)
	}
	n, changed := b.change(ctx, func(cur State) (State, bool) { return Evolve(cur, now, b.p, tr) })
	b.mu.Lock()
	b.tripping = false
	b.mu.Unlock()
	if changed {
		b.log(slog.LevelWarn, "circuits: the circuit opened; the function is not called until a probe succeeds", n,
			"cause", string(cause), "consecutiveFailures", consecutive, "callsInWindow", calls, "failuresInWindow", failures,
			"window", b.p.Window, "coolDown", time.Duration(n.Until-now.UnixMilli())*time.Millisecond, "lastError", last.Message)
	}
}

func (b *Breaker) probeDone(ctx context.Context, now time.Time, t Ticket, failed bool, o Outcome) {
	if o.Err != nil && !failed {
		// An answer of a live dependency about its event: the probe is
		// freed, neither success nor failure.
		b.change(ctx, func(cur State) (State, bool) { return Evolve(cur, now, b.p, ProbeSilence{ID: t.probe}) })
		return
	}
	if !failed {
		n, changed := b.change(ctx, func(cur State) (State, bool) { return Evolve(cur, now, b.p, ProbeSuccess{ID: t.probe}) })
		if changed && n.Phase == Closed {
			b.log(slog.LevelInfo, "circuits: the probes succeeded; the circuit closed", n, "successes", b.p.Successes,
				"refused", n.Refused, "openFor", time.Duration(now.UnixMilli()-n.Incident.From)*time.Millisecond)
		}
		return
	}
	last := failureOf(now, o)
	r := rand.Float64()
	n, changed := b.change(ctx, func(cur State) (State, bool) {
		return Evolve(cur, now, b.p, ProbeFailure{ID: t.probe, Last: last, Jitter: r})
	})
	if changed && n.Phase == Open {
		b.log(slog.LevelWarn, "circuits: the probes failed; the circuit opened again", n, "probeFailures", b.p.ProbeFailures,
			"coolDown", time.Duration(n.Until-now.UnixMilli())*time.Millisecond, "lastError", last.Message)
	}
}

// recovered reports, once, that a call succeeded after a streak of
// failures: the incident from the streak's first failure to now.
func (b *Breaker) recovered(ctx context.Context, now time.Time) {
	from := b.failingSince.Swap(0)
	if from == 0 || !b.closed.Load() {
		return
	}
	n, changed := b.change(ctx, func(cur State) (State, bool) { return Evolve(cur, now, b.p, Recovery{From: from}) })
	if changed {
		b.log(slog.LevelInfo, "circuits: a call succeeded after a streak of failures; the records of the incident will be drained", n,
			"from", time.UnixMilli(n.Incident.From).UTC(), "to", time.UnixMilli(n.Incident.To).UTC())
	}
}

func failureOf(now time.Time, o Outcome) Failure {
	var f Failure
	if o.Last != nil {
		f = o.Last()
	} else if o.Err != nil {
		f = Failure{Code: codeOf(o.Err), Message: o.Err.Error()}
	}
	f.Message = clip(f.Message, MaxMessageBytes)
	f.Code = clip(f.Code, maxCodeBytes)
	f.At = now.UnixMilli()
	return f
}

func codeOf(err error) string {
	var coded interface{ Code() string }
	if errors.As(err, &coded) {
		return coded.Code()
	}
	return ""
}

// change applies f to the circuit in the bucket (or here alone, without
// one or when it cannot be written) and keeps what results.
func (b *Breaker) change(ctx context.Context, f func(State) (State, bool)) (State, bool) {
	if b.set.store == nil {
		return b.local(f)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	n, rev, changed, err := b.set.store.Update(wctx, b.f, f)
	if err != nil {
		b.set.warn.do(b.set.clock.Now(), func() {
			b.set.logger.Warn("circuits: the circuit bucket cannot be written; this instance applies the change alone", "function", b.f.String(), "err", err)
		})
		return b.local(f)
	}
	b.observe(n, rev)
	return n, changed
}

func (b *Breaker) local(f func(State) (State, bool)) (State, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, changed := f(b.state)
	if changed {
		b.settle(n)
	}
	return b.state, changed
}

// refresh reads the circuit from the bucket, keeps it and returns what the
// breaker has then; on an error it returns what it had.
func (b *Breaker) refresh(ctx context.Context) State {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if st, rev, err := b.set.store.Get(rctx, b.f); err == nil {
		b.observe(st, rev)
	}
	return b.State()
}

// observe takes st at revision rev, unless it is older than what the
// breaker has.
func (b *Breaker) observe(st State, rev uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rev != 0 && rev <= b.rev {
		return
	}
	b.rev = rev
	b.settle(st)
}

// settle makes st the breaker's state; b.mu held. A circuit that closes
// starts counting again.
func (b *Breaker) settle(st State) {
	if st.Phase == Closed && b.state.Phase != Closed {
		b.win.reset()
	}
	b.state = st
	b.closed.Store(b.p.Off || st.Phase == Closed)
}

func (b *Breaker) log(level slog.Level, msg string, st State, attrs ...any) {
	attrs = append([]any{"function", b.f.String(), "state", string(st.Phase), "instance", b.set.instance}, attrs...)
	if t, ok := st.LastTransition(); ok {
		attrs = append(attrs, "transition", t.Seq)
	}
	b.set.logger.Log(context.Background(), level, msg, attrs...)
}
