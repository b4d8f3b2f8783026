package processor

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// disposition is what happens to a message after its handling.
type disposition int

const (
	ack         disposition = iota // done
	nak                            // recording failed: redeliver after the nak delay
	term                           // undecodable or quarantined: never redeliver
	interrupted                    // stopped midway: redeliver at once
)

// runner feeds one durable consumer's messages to lanes: a message goes to
// the lane of its subject (one aggregate), and each lane handles its
// messages one at a time, so one aggregate's messages are handled in the
// order the consumer delivers them.
type runner struct {
	p       *Processor
	stream  string
	cfg     jetstream.ConsumerConfig
	lanes   int
	handle  func(ctx context.Context, m jetstream.Msg) disposition
	metrics *ConsumerMetrics // of this kind of consumer (live or replay)
	backoff bool             // nak delays grow with deliveries (replays)
	current []atomic.Pointer[jetstream.Msg]
}

// laneOf hashes a subject (FNV-1a) to one of n lanes.
func laneOf(subject string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(subject); i++ {
		h ^= uint32(subject[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// run consumes until stopping ends, then lets the lanes finish (handlers
// run with work, which the caller cancels after the shutdown timeout) and
// returns once every goroutine it started has returned.
func (r *runner) run(stopping, work context.Context) {
	r.current = make([]atomic.Pointer[jetstream.Msg], r.lanes)
	queues := make([]*queue, r.lanes)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = newQueue()
		wg.Go(func() { r.lane(i, queues[i], stopping, work) })
	}
	hbDone := make(chan struct{})
	var hb sync.WaitGroup
	hb.Go(func() { r.heartbeat(hbDone) })

	r.pull(stopping, queues)
	for _, q := range queues {
		q.close()
	}
	wg.Wait()
	close(hbDone)
	hb.Wait()
}

func (r *runner) lane(i int, q *queue, stopping, work context.Context) {
	for {
		m, ok := q.pop()
		if !ok {
			return
		}
		if stopping.Err() != nil {
			r.settle(m, interrupted) // not started: let another instance have it now
			continue
		}
		r.current[i].Store(&m)
		d := r.handle(work, m)
		r.current[i].Store(nil)
		r.settle(m, d)
	}
}

func (r *runner) settle(m jetstream.Msg, d disposition) {
	var err error
	var counter *atomic.Uint64
	switch d {
	case ack:
		err, counter = m.Ack(), &r.metrics.Acked
	case nak:
		err, counter = m.NakWithDelay(r.nakDelay(m)), &r.metrics.Naked
	case interrupted:
		err, counter = m.Nak(), &r.metrics.Naked
	case term:
		err, counter = m.Term(), &r.metrics.Terminated
	}
	if err == nil {
		counter.Add(1)
		return
	}
	r.metrics.AckErrors.Add(1)
	r.p.o.logger.Warn("amends processor: could not settle message; the server redelivers it after AckWait",
		"consumer", r.cfg.Durable, "subject", m.Subject(), "err", err)
}

// heartbeat sends InProgress for every message that has been running for a
// whole tick (a third of AckWait), so long handlers keep their message.
func (r *runner) heartbeat(done <-chan struct{}) {
	t := time.NewTicker(r.p.o.ackWait / 3)
	defer t.Stop()
	last := make([]*jetstream.Msg, len(r.current))
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		for i := range r.current {
			m := r.current[i].Load()
			if m != nil && m == last[i] {
				_ = (*m).InProgress()
			}
			last[i] = m
		}
	}
}

// pullExpiry bounds one pull request on the server. Should the client ever
// lose track of its outstanding pulls, its missed-heartbeat check (half of
// this) pulls again within seconds instead of the default 30 s.
const pullExpiry = 5 * time.Second

// pull consumes until stopping ends, re-creating the consumer if it fails
// (deleted, or the connection closed). The callback only hands each message
// to its lane's queue and never blocks, so the subscription keeps up with
// the server's messages and status notifications.
func (r *runner) pull(stopping context.Context, queues []*queue) {
	log := r.p.o.logger
	opts := []jetstream.PullConsumeOpt{jetstream.PullMaxMessages(min(r.cfg.MaxAckPending, 1000)), jetstream.PullExpiry(pullExpiry)}
	if r.p.o.pinned {
		opts = append(opts, jetstream.PullPriorityGroup(priorityGroup))
	}
	for stopping.Err() == nil {
		cons, err := r.p.ensureConsumer(stopping, r.stream, r.cfg)
		if err != nil {
			log.Warn("amends processor: consumer unavailable; retrying", "consumer", r.cfg.Durable, "err", err)
			_ = Sleep(stopping, time.Second)
			continue
		}
		lost := make(chan struct{})
		var once sync.Once
		onErr := jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConnectionClosed) {
				once.Do(func() { close(lost) })
			}
			log.Debug("amends processor: consume", "consumer", r.cfg.Durable, "err", err)
		})
		cc, err := cons.Consume(func(m jetstream.Msg) {
			r.metrics.Delivered.Add(1)
			queues[laneOf(m.Subject(), len(queues))].push(m)
		}, append(opts, onErr)...)
		if err != nil {
			log.Warn("amends processor: cannot consume; retrying", "consumer", r.cfg.Durable, "err", err)
			_ = Sleep(stopping, time.Second)
			continue
		}
		select {
		case <-stopping.Done():
		case <-lost:
			log.Warn("amends processor: consumer lost; re-creating it", "consumer", r.cfg.Durable)
		case <-cc.Closed():
			log.Warn("amends processor: consumer stopped; re-creating it", "consumer", r.cfg.Durable)
			_ = Sleep(stopping, time.Second)
		}
		cc.Stop()
		<-cc.Closed()
	}
}
