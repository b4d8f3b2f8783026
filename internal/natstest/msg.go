package natstest

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Msg is a jetstream.Msg as a consumer delivers it, with whatever subject,
// headers, body, sequence and delivery count a test (or a fuzzer) makes,
// so that a handler can be called without a server delivering it. It
// counts how it was settled. Safe for concurrent use.
type Msg struct {
	Subj      string
	Header    nats.Header
	Body      []byte
	Seq       uint64
	Delivered uint64
	// Stream and Consumer are what Metadata reports.
	Stream, Consumer string

	mu                            sync.Mutex
	acks, naks, inProgress, terms int
}

var _ jetstream.Msg = (*Msg)(nil)

// Settled returns how often the message was acked (Ack, DoubleAck), nak'ed
// (Nak, NakWithDelay), terminated (Term, TermWithReason) and kept
// (InProgress).
func (m *Msg) Settled() (acks, naks, terms, inProgress int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acks, m.naks, m.terms, m.inProgress
}

func (m *Msg) count(n *int) error {
	m.mu.Lock()
	*n++
	m.mu.Unlock()
	return nil
}

// Metadata returns the stream and consumer sequence Seq and Delivered.
func (m *Msg) Metadata() (*jetstream.MsgMetadata, error) {
	return &jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Stream: m.Seq, Consumer: m.Seq},
		NumDelivered: m.Delivered, Stream: m.Stream, Consumer: m.Consumer}, nil
}

func (m *Msg) Data() []byte                     { return m.Body }
func (m *Msg) Headers() nats.Header             { return m.Header }
func (m *Msg) Subject() string                  { return m.Subj }
func (m *Msg) Reply() string                    { return "" }
func (m *Msg) Ack() error                       { return m.count(&m.acks) }
func (m *Msg) DoubleAck(context.Context) error  { return m.count(&m.acks) }
func (m *Msg) Nak() error                       { return m.count(&m.naks) }
func (m *Msg) NakWithDelay(time.Duration) error { return m.count(&m.naks) }
func (m *Msg) InProgress() error                { return m.count(&m.inProgress) }
func (m *Msg) Term() error                      { return m.count(&m.terms) }
func (m *Msg) TermWithReason(string) error      { return m.count(&m.terms) }
