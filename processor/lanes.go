package processor

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/inflight"
)

// disposition is what happens to a message after its handling. The order
// matters: of a message's tasks, the highest wins.
type disposition int

const (
	ack         disposition = iota // done
	nak                            // recording failed: redeliver after the nak delay
	interrupted                    // stopped midway: redeliver at once
	term                           // undecodable or quarantined: never redeliver
)

// runner feeds one durable consumer's messages through the consumer
// runtime (internal/inflight): a message goes to the lane of its subject
// (one aggregate, or one record), where handle turns it into tasks, one
// per function (or prepare), that run in order per (subject, function)
// and may wait on a timer without holding the lane (tasks.go).
type runner struct {
	p       *Processor
	stream  string
	cfg     jetstream.ConsumerConfig
	rt      *inflight.Runtime
	handle  func(ctx context.Context, ls *laneState, m *inflight.Msg)
	metrics *ConsumerMetrics // of this kind of consumer (live or replay)
	backoff bool             // nak delays grow with deliveries (replays)
	done    *completions     // what already ran of messages that come back
	shedLog logEvery         // "retries shed" at most once per interval
	// background runs the tasks' recordings (laneState.background), a few
	// per lane at a time.
	background *workers
	// settled, when set, sees every disposition before it is applied
	// (tests of the handlers).
	settled func(d disposition)
	// lanes are the states of the lanes of the Consume running, set
	// before it starts and read only on those lanes' goroutines (by
	// messages and by work posted to them, calltask.go).
	lanes    []*laneState
	stopping context.Context
}

func (p *Processor) newRunner(stream string, cfg jetstream.ConsumerConfig, lanes int, metrics *ConsumerMetrics) (*runner, error) {
	c := metrics
	rt, err := inflight.New(inflight.Config{Name: cfg.Durable, Lanes: lanes, AckWait: cfg.AckWait, MaxAckPending: cfg.MaxAckPending,
		PullOpts: p.pullOpts(), Logger: p.o.logger,
		Counters: inflight.Counters{Delivered: &c.Delivered, Acked: &c.Acked, Naked: &c.Naked, Terminated: &c.Terminated, AckErrors: &c.AckErrors}})
	if err != nil {
		return nil, err
	}
	return &runner{p: p, stream: stream, cfg: cfg, rt: rt, metrics: metrics, done: newCompletions(cfg.MaxAckPending),
		background: newWorkers(max(recordingsPerLane*lanes, minRecordings))}, nil
}

func (p *Processor) pullOpts() []jetstream.PullConsumeOpt {
	if p.o.pinned {
		return []jetstream.PullConsumeOpt{jetstream.PullPriorityGroup(priorityGroup)}
	}
	return nil
}

// run consumes until stopping ends, re-creating the consumer if it fails
// (deleted, or the connection closed); handlers run with work, which the
// caller cancels after the shutdown timeout. It returns once every
// goroutine it started has returned.
func (r *runner) run(stopping, work context.Context) {
	log := r.p.o.logger
	for stopping.Err() == nil {
		cons, err := r.p.ensureConsumer(stopping, r.stream, r.cfg)
		if err != nil {
			log.Warn("amends processor: consumer unavailable; retrying", "consumer", r.cfg.Durable, "err", err)
			_ = Sleep(stopping, time.Second)
			continue
		}
		r.lanes, r.stopping = make([]*laneState, r.p.laneCount(r)), stopping
		err = r.rt.Consume(stopping, work, cons, func(ctx context.Context, l *inflight.Lane, msgs []jetstream.Msg) {
			ls := r.laneState(l)
			for _, m := range msgs {
				r.handle(ctx, ls, m.(*inflight.Msg))
			}
		})
		for _, ls := range r.lanes {
			if ls != nil {
				ls.stop()
			}
		}
		r.background.Wait()
		if stopping.Err() != nil {
			return
		}
		log.Warn("amends processor: consumer lost; re-creating it", "consumer", r.cfg.Durable, "err", err)
		if errors.Is(err, inflight.ErrConsumerEnded) {
			_ = Sleep(stopping, time.Second)
		}
	}
}

// laneState returns the state of lane l of the Consume running, made at
// its first use; on l's goroutine only.
func (r *runner) laneState(l *inflight.Lane) *laneState {
	ls := r.lanes[l.Index()]
	if ls == nil {
		ls = newLaneState(r, l, r.stopping)
		r.lanes[l.Index()] = ls
	}
	return ls
}

// laneCount is how many lanes r's consumer has.
func (p *Processor) laneCount(r *runner) int {
	if r.backoff {
		return p.o.replayLanes
	}
	return p.o.concurrency
}

// settle settles m as d says; the runtime counts it.
func (r *runner) settle(m *inflight.Msg, d disposition) {
	if r.settled != nil {
		r.settled(d)
	}
	var err error
	switch d {
	case ack:
		err = m.Ack()
	case nak:
		err = m.NakWithDelay(r.nakDelay(m))
	case interrupted:
		err = m.Nak()
	case term:
		err = m.Term()
	}
	if err != nil {
		r.p.o.logger.Warn("amends processor: could not settle message; the server redelivers it after AckWait",
			"consumer", r.cfg.Durable, "subject", m.Subject(), "err", err)
	}
}

// shed reports whether a failure must skip its immediate retries because
// the consumer holds three quarters of MaxAckPending: messages waiting on
// retries must never fill it, or the server would stop delivering the
// other functions' messages. The failure is recorded at once instead, its
// record the durable form of the retry.
func (r *runner) shed() bool {
	held, capacity := r.rt.Held(), r.rt.Capacity()
	if held*4 < capacity*3 {
		return false
	}
	r.shedLog.do(r.p.o.clock.Now(), func() {
		r.p.o.logger.Warn("amends processor: the consumer holds 3/4 of its MaxAckPending; failures are recorded without immediate retries until it holds fewer",
			"consumer", r.cfg.Durable, "held", held, "maxAckPending", capacity)
	})
	return true
}
