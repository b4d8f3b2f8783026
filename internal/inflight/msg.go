package inflight

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Msg is a message the runtime holds. It is a jetstream.Msg: settling it
// (Ack, DoubleAck, Nak, NakWithDelay, Term, TermWithReason) settles the
// newest delivery of the message and ends its lease. Its metadata is
// parsed once. Safe for concurrent use.
type Msg struct {
	shard *shard
	key   uint64
	cur   atomic.Pointer[delivery]
	tick  uint64 // the heartbeat tick it arrived in; shard.mu
}

// delivery is one delivery of a message, with its parsed metadata.
type delivery struct {
	m   jetstream.Msg
	md  *jetstream.MsgMetadata
	err error
}

var _ jetstream.Msg = (*Msg)(nil)

// Seq returns the message's stream sequence (0 if its metadata did not
// parse).
func (m *Msg) Seq() uint64 {
	if d := m.cur.Load(); d.md != nil {
		return d.md.Sequence.Stream
	}
	return 0
}

// Delivered returns how often the server delivered the message (1 if its
// metadata did not parse).
func (m *Msg) Delivered() uint64 {
	if d := m.cur.Load(); d.md != nil {
		return d.md.NumDelivered
	}
	return 1
}

// Metadata returns the newest delivery's metadata, parsed once.
func (m *Msg) Metadata() (*jetstream.MsgMetadata, error) {
	d := m.cur.Load()
	return d.md, d.err
}

// Data returns the message's body.
func (m *Msg) Data() []byte { return m.cur.Load().m.Data() }

// Headers returns the message's headers.
func (m *Msg) Headers() nats.Header { return m.cur.Load().m.Headers() }

// Subject returns the message's subject.
func (m *Msg) Subject() string { return m.cur.Load().m.Subject() }

// Reply returns the newest delivery's reply subject.
func (m *Msg) Reply() string { return m.cur.Load().m.Reply() }

// InProgress restarts the newest delivery's AckWait.
func (m *Msg) InProgress() error { return m.cur.Load().m.InProgress() }

// Ack acks the message and ends its lease.
func (m *Msg) Ack() error { return m.settle(ackOf, m.cur.Load().m.Ack()) }

// DoubleAck acks the message, waits for the server's confirmation, and
// ends its lease.
func (m *Msg) DoubleAck(ctx context.Context) error {
	return m.settle(ackOf, m.cur.Load().m.DoubleAck(ctx))
}

// Nak asks for the message's redelivery now and ends its lease.
func (m *Msg) Nak() error { return m.settle(nakOf, m.cur.Load().m.Nak()) }

// NakWithDelay asks for the message's redelivery after delay and ends its
// lease.
func (m *Msg) NakWithDelay(delay time.Duration) error {
	return m.settle(nakOf, m.cur.Load().m.NakWithDelay(delay))
}

// Term ends the message for good and ends its lease.
func (m *Msg) Term() error { return m.settle(termOf, m.cur.Load().m.Term()) }

// TermWithReason ends the message for good, with a reason for the server's
// advisory, and ends its lease.
func (m *Msg) TermWithReason(reason string) error {
	return m.settle(termOf, m.cur.Load().m.TermWithReason(reason))
}

type settleKind int

const (
	ackOf settleKind = iota
	nakOf
	termOf
)

// settle drops m from the held messages and counts how it was settled.
func (m *Msg) settle(k settleKind, err error) error {
	m.shard.drop(m)
	c := m.shard.rt.cfg.Counters
	var n *atomic.Uint64
	switch {
	case err != nil:
		n = c.AckErrors
	case k == ackOf:
		n = c.Acked
	case k == nakOf:
		n = c.Naked
	default:
		n = c.Terminated
	}
	if n != nil {
		n.Add(1)
	}
	return err
}

// shard is the messages one lane holds, by stream sequence.
type shard struct {
	rt   *Runtime
	mu   sync.Mutex
	tick uint64
	msgs map[uint64]*Msg
	next uint64 // keys of messages without metadata, from the top down
}

func newShard(rt *Runtime) *shard {
	return &shard{rt: rt, msgs: make(map[uint64]*Msg), next: ^uint64(0)}
}

// add holds the delivery m and returns its Msg, and false when m is a
// redelivery of a message held already: that Msg now settles through m.
func (s *shard) add(m jetstream.Msg) (*Msg, bool) {
	d := &delivery{m: m}
	d.md, d.err = m.Metadata()
	s.mu.Lock()
	defer s.mu.Unlock()
	var key uint64
	if d.md != nil {
		key = d.md.Sequence.Stream
		if held, ok := s.msgs[key]; ok {
			held.cur.Store(d)
			return held, false
		}
	} else {
		key = s.next
		s.next--
	}
	h := &Msg{shard: s, key: key, tick: s.tick}
	h.cur.Store(d)
	s.msgs[key] = h
	s.rt.held.Add(1)
	return h, true
}

func (s *shard) drop(m *Msg) {
	s.mu.Lock()
	if s.msgs[m.key] == m {
		delete(s.msgs, m.key)
		s.rt.held.Add(-1)
	}
	s.mu.Unlock()
}

// due returns the messages held since before the last tick, appended to
// buf, and starts a new tick.
func (s *shard) due(buf []*Msg) []*Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		if m.tick < s.tick {
			buf = append(buf, m)
		}
	}
	s.tick++
	return buf
}

// all returns every message held, appended to buf.
func (s *shard) all(buf []*Msg) []*Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.msgs {
		buf = append(buf, m)
	}
	return buf
}

// Hold returns a Msg of m held by no consumer: its lease is nobody's, and
// settling it only settles m. For handlers called without a Runtime
// (tests, fuzzers).
func Hold(m jetstream.Msg) *Msg {
	rt := &Runtime{}
	held, _ := newShard(rt).add(m)
	return held
}
