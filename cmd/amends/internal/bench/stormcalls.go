package bench

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
)

// stormLatencies collects one function's first-call latencies by phase.
type stormLatencies struct {
	before, during, after []time.Duration
}

// stormState is what the functions observe, shared by their calls.
type stormState struct {
	failing atomic.Bool
	outage  atomic.Bool // the outage is on: count calls during it
	mu      sync.Mutex
	ok      [3]map[string]bool // per function: events it succeeded on
	seen    [3]map[string]bool // per function: events it was called on
	// metOutage holds the events a live call of Mailer.send failed on
	// because of the outage.
	metOutage     map[string]bool
	lat           [3]stormLatencies
	calls         [3]atomic.Uint64
	replays       [3]atomic.Uint64
	during        [3]atomic.Uint64
	replaysDuring [3]atomic.Uint64
	reruns        [3]atomic.Uint64
	// outageStart and outageEnd are unix nanos, appended events carry
	// their append time in their body.
	outageStart, outageEnd atomic.Int64
	allOK                  chan struct{} // closed once every function succeeded on every event it can
	total                  int
	doneOK                 int // (function, event) pairs succeeded
	badPct                 int
	ids                    []string // the events' ids, in the order they are appended
	badEvents              int      // the events Mailer.send fails on for their own reason
	// healthyRefused and healthyRecorded count Mailer.send's healthy events
	// refused, and recorded, while the dependency was up.
	healthyRefused, healthyRecorded atomic.Uint64
	// strayRecords counts the records made of a failure the outage does
	// not explain: of a function other than Mailer.send, or of an event
	// whose live call met neither the outage nor a refusal of the circuit.
	strayRecords atomic.Uint64
}

type stormBody struct {
	At int64 `json:"at"` // unix nanos of the append
}

// call notes a call of function i on d and returns whether it succeeds.
func (s *stormState) call(ctx context.Context, i int, d *processor.Delivery, body stormBody) error {
	s.calls[i].Add(1)
	_, replay := processor.CompensationFrom(ctx)
	if replay {
		s.replays[i].Add(1)
	}
	if s.outage.Load() {
		s.during[i].Add(1)
		if replay {
			s.replaysDuring[i].Add(1)
		}
	}
	fail := i == 0 && s.failing.Load()
	id := d.Event.ID
	bad := i == 0 && BadEvent(id, s.badPct)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ok[i][id] {
		s.reruns[i].Add(1)
	}
	if !s.seen[i][id] {
		s.seen[i][id] = true
		lat := time.Duration(time.Now().UnixNano() - body.At)
		switch {
		case body.At < s.outageStart.Load():
			s.lat[i].before = append(s.lat[i].before, lat)
		case body.At < s.outageEnd.Load():
			s.lat[i].during = append(s.lat[i].during, lat)
		default:
			s.lat[i].after = append(s.lat[i].after, lat)
		}
	}
	if fail {
		if !replay {
			s.metOutage[id] = true
		}
		return failure.Recoverable(errors.New("smtp 451: mail service unavailable"))
	}
	if bad {
		return errBadAddress
	}
	if !s.ok[i][id] {
		s.ok[i][id] = true
		s.doneOK++
		if s.doneOK == s.total {
			close(s.allOK)
		}
	}
	return nil
}

var errBadAddress = errors.New("550 bad address: no such mailbox")

// outcomes counts the recorder's outcomes, and the records of Mailer.send's
// healthy events made while the dependency was up (state).
type outcomes struct {
	processor.FailureRecorder
	created, already atomic.Uint64
	state            *stormState
}

// Describe forwards to the recorder, so refused calls' records carry the
// last failure's fingerprint.
func (o *outcomes) Describe(f aggregate.FunctionInfo, err error, rules failure.Rules) (aggregate.ErrorDetails, aggregate.Recoverability) {
	if d, ok := o.FailureRecorder.(processor.FailureDescriber); ok {
		return d.Describe(f, err, rules)
	}
	return aggregate.ErrorDetails{ErrorCode: "Unclassified", ErrorMsg: err.Error()}, failure.Classify(err, rules)
}

func (o *outcomes) Record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	out, err := o.FailureRecorder.Record(ctx, x)
	switch out {
	case processor.OutcomeRecorded:
		o.created.Add(1)
	case processor.OutcomeAlreadyRecorded:
		o.already.Add(1)
	}
	if s := o.state; s != nil && x.Compensation == nil && x.Function != nil {
		s.noteRecord(x, out)
	}
	return out, err
}

// noteRecord counts x, a live failure given to the recorder with outcome
// out: a stray record, or one of a healthy event of Mailer.send while the
// dependency was up.
func (s *stormState) noteRecord(x processor.Execution, out processor.Outcome) {
	if out == processor.OutcomeRecorded && s.stray(x) {
		s.strayRecords.Add(1)
	}
	if x.Err != nil && x.Function.Name == stormSend.Name && x.Function.ProcessorName == stormSend.Processor &&
		!s.failing.Load() && !BadEvent(x.EventID.ID, s.badPct) {
		s.healthyRecorded.Add(1)
		if errors.Is(x.Err, circuit.ErrOpen) {
			s.healthyRefused.Add(1)
		}
	}
}

// stray reports whether x, a live failure that made a new record, is
// one the storm does not explain: Mailer.send's bad events, the events its
// live calls failed on in the outage, and the calls its circuit refused
// are the only ones.
func (s *stormState) stray(x processor.Execution) bool {
	if x.Function.Name != stormSend.Name || x.Function.ProcessorName != stormSend.Processor {
		return true
	}
	if errors.Is(x.Err, circuit.ErrOpen) || BadEvent(x.EventID.ID, s.badPct) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.metOutage[x.EventID.ID]
}

// playOutage fails Mailer.send from c.Before after start for c.Outage,
// flapping down and up if c says so, and stops at ctx's end.
func (s *stormState) playOutage(ctx context.Context, c StormConfig, start time.Time, log *slog.Logger) {
	if sleepUntil(ctx, start.Add(c.Before)) != nil {
		return
	}
	s.failing.Store(true)
	s.outage.Store(true)
	log.Info("storm: outage begins", "function", "Mailer.send", "for", c.Outage, "flapDown", c.FlapDown, "flapUp", c.FlapUp)
	if c.FlapDown > 0 {
		// Down, up, down, ... until the outage's end.
		at := start.Add(c.Before)
		for down := true; ; down = !down {
			if down {
				at = at.Add(c.FlapDown)
			} else {
				at = at.Add(c.FlapUp)
			}
			if !at.Before(start.Add(c.Before + c.Outage)) {
				break
			}
			if sleepUntil(ctx, at) != nil {
				return
			}
			s.failing.Store(!down)
		}
	}
	if sleepUntil(ctx, start.Add(c.Before+c.Outage)) != nil {
		return
	}
	s.failing.Store(false)
	s.outage.Store(false)
	log.Info("storm: outage ends")
}

func (l *stormLatencies) phases() StormPhases {
	return StormPhases{Before: latencyOf(l.before), During: latencyOf(l.during), After: latencyOf(l.after)}
}
