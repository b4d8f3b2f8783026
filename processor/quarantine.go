package processor

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/quarantine"
)

// WithQuarantine sets where the consumers record the messages they can
// never handle (default: a quarantine.Quarantine on the processor's
// JetStream, with the compensation stream's replica count). Share one
// between the processors and the projector of a process to count them
// together.
func WithQuarantine(q *quarantine.Quarantine) Option {
	return func(o *options) error {
		if q == nil {
			return invalidOption("quarantine must not be nil")
		}
		o.quarantine = q
		return nil
	}
}

// WithReplayRetry sets how a replay message that failed with an error that
// may be transient (the record or the original event could not be read,
// the result could not be recorded) is redelivered, and after how many
// deliveries it is quarantined instead (default: quarantine.DefaultRetry,
// starting at the nak delay). A quarantined replay leaves its record
// PREPARED; it times out and the scheduler prepares it again.
func WithReplayRetry(r quarantine.Retry) Option {
	return func(o *options) error {
		if r.First < 0 || r.Max < 0 {
			return invalidOption("replay retry delays must be >= 0, got first %s and max %s", r.First, r.Max)
		}
		o.replayRetry = r
		return nil
	}
}

// Quarantine returns where the processor records the messages it
// terminates.
func (p *Processor) Quarantine() *quarantine.Quarantine { return p.o.quarantine }

// defaultQuarantine fills in the quarantine and the replay retry.
func (o *options) defaultQuarantine(p *Processor) error {
	if o.replayRetry.First == 0 {
		o.replayRetry.First = o.nakDelay
	}
	if o.quarantine != nil {
		return nil
	}
	replicas := max(p.store.Replicas(), 1)
	q, err := quarantine.New(p.js, quarantine.WithReplicas(replicas), quarantine.WithLogger(o.logger, 0), quarantine.WithClock(o.clock))
	if err != nil {
		return invalidOption("quarantine: %v", err)
	}
	o.quarantine = q
	return nil
}

// replayDelay is how long a replay message delivered n times waits before
// its next delivery.
func (p *Processor) replayDelay(n uint64) time.Duration {
	if p.o.nakDelay == 0 && p.o.replayRetry.First == 0 {
		return 0
	}
	return p.o.replayRetry.Delay(n)
}

// nakDelay is how long the runner's nak'ed message m waits: the replay
// consumer's grows with m's deliveries, the others' is the nak delay.
func (r *runner) nakDelay(m jetstream.Msg) time.Duration {
	if !r.backoff {
		return r.p.o.nakDelay
	}
	return r.p.replayDelay(deliveries(m))
}

func deliveries(m jetstream.Msg) uint64 {
	if md, err := m.Metadata(); err == nil {
		return md.NumDelivered
	}
	return 1
}

// quarantine records m in the quarantine for consumer and returns term. If
// it cannot be recorded, m is redelivered later (nak), so that nothing is
// terminated without a trace, until its retries are exhausted: then it is
// terminated with only this log line as its trace.
func (p *Processor) quarantine(ctx context.Context, m jetstream.Msg, consumer string, reason quarantine.Reason, cause error) disposition {
	err := p.o.quarantine.Record(ctx, m, consumer, reason, cause)
	if err == nil {
		return term
	}
	if ctx.Err() != nil {
		return interrupted
	}
	if p.o.replayRetry.Exhausted(deliveries(m)) {
		p.o.logger.Error("amends processor: message terminated; the quarantine could not record it",
			"consumer", consumer, "subject", m.Subject(), "reason", string(reason), "cause", cause, "err", err)
		return term
	}
	p.o.logger.Warn("amends processor: cannot quarantine a message; redelivering",
		"consumer", consumer, "subject", m.Subject(), "reason", string(reason), "cause", cause, "err", err)
	return nak
}

// retryReplay hands a replay message that failed with cause back for
// redelivery (after replayDelay), or quarantines it once its deliveries
// are exhausted.
func (p *Processor) retryReplay(ctx context.Context, m jetstream.Msg, cause error) disposition {
	if ctx.Err() != nil {
		return interrupted
	}
	n := deliveries(m)
	if p.o.replayRetry.Exhausted(n) {
		return p.quarantine(ctx, m, ReplayDurableName(p.context), quarantine.ReasonRetriesExhausted, cause)
	}
	level := p.o.logger.Debug
	if n <= 1 {
		level = p.o.logger.Warn
	}
	level("amends processor: replay not done; retrying later", "subject", m.Subject(), "deliveries", n, "retryIn", p.replayDelay(n), "err", cause)
	return nak
}
