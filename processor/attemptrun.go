package processor

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// An attempt's run (beyond Wow) is when it started and which instance and
// build ran it; the recorder stores it with the outcome (aggregate.Run).
//
// The start is noted by each function's handler wrapper on first call for
// a delivery (immediate retries belong to the same attempt) in the lane's
// attemptClock, which the lane resets before each message: one clock per
// lane goroutine, used by one message at a time, so no lock and no
// allocation per message.

type attemptClockKey struct{}

// attemptClock is the start of the current delivery's attempt on one lane.
type attemptClock struct {
	d  *Delivery
	at time.Time
}

// withAttemptClock returns ctx carrying a fresh lane clock.
func withAttemptClock(ctx context.Context) (context.Context, *attemptClock) {
	c := &attemptClock{}
	return context.WithValue(ctx, attemptClockKey{}, c), c
}

// reset forgets the previous message's attempt.
func (c *attemptClock) reset() { c.d, c.at = nil, time.Time{} }

// timed wraps h so that its first call for a delivery notes the start.
func (p *Processor) timed(h Handler) Handler {
	return func(ctx context.Context, d *Delivery) error {
		if c, ok := ctx.Value(attemptClockKey{}).(*attemptClock); ok && c.d != d {
			c.d, c.at = d, p.o.clock.Now()
		}
		return h(ctx, d)
	}
}

// startOf is the noted start of x's attempt, or zero if the function was
// not called for it on this lane (e.g. a replay whose event is missing).
func startOf(ctx context.Context, x *Execution) time.Time {
	c, ok := ctx.Value(attemptClockKey{}).(*attemptClock)
	if !ok || c.d == nil || c.d.Event == nil || x.Function == nil {
		return time.Time{}
	}
	if c.d.Event.ID != x.EventID.ID || c.d.Function.ProcessorName != x.Function.ProcessorName || c.d.Function.Name != x.Function.Name {
		return time.Time{}
	}
	return c.at
}

// runRecorder fills in an execution's run (start, instance, build) before
// handing it to the configured recorder.
type runRecorder struct {
	next            FailureRecorder
	instance, build string
}

func (r runRecorder) Record(ctx context.Context, x Execution) (Outcome, error) {
	if x.StartedAt.IsZero() {
		x.StartedAt = startOf(ctx, &x)
	}
	if x.Instance == "" {
		x.Instance, x.Build = r.instance, r.build
	}
	return r.next.Record(ctx, x)
}

// Instance is the id of this processor instance, as the build registry
// and the records' attempt runs show it. Safe for concurrent use.
func (p *Processor) Instance() string { return p.instance }

// identify names the instance and wraps the recorder to fill in runs.
func (p *Processor) identify() {
	p.instance, p.build = uuid.NewString(), BinaryBuild()
	if p.o.build != nil {
		p.instance, p.build = p.o.build.instance, p.o.build.build
	}
	if p.o.recorder != nil {
		p.o.recorder = runRecorder{next: p.o.recorder, instance: p.instance, build: p.build.String()}
	}
}
