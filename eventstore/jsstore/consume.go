package jsstore

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
)

// FilterSubject returns the subject filter of a context's streams
// ("amends.orders.>"), or of one aggregate type's ("amends.orders.order.>")
// when aggregateType is not empty: what a consumer of those streams filters on.
func (s *Store) FilterSubject(context, aggregateType string) string {
	if aggregateType == "" {
		return s.opts.subjectPrefix + "." + context + ".>"
	}
	return s.opts.subjectPrefix + "." + context + "." + aggregateType + ".>"
}

// DecodeMsg decodes a message a consumer received from one of the store's
// streams, with the same checks as a read (the document must match its
// subject and headers), and sets Seq from the message's metadata. An error
// matches eventstore.ErrCorrupt; such a message can never be processed and should be
// terminated.
//
// When the Store knows an older position of the message's aggregate (it
// appended to it or read it before), it takes the message's as the newer
// one, so that its next read or append of that aggregate starts there.
// Safe for concurrent use.
func (s *Store) DecodeMsg(m jetstream.Msg) (eventstore.Stream, error) {
	md, err := m.Metadata()
	if err != nil {
		return eventstore.Stream{}, fmt.Errorf("message on %s has no JetStream metadata: %v: %w", m.Subject(), err, eventstore.ErrCorrupt)
	}
	raw := &rawMsg{subject: m.Subject(), seq: md.Sequence.Stream, header: m.Headers(), data: m.Data()}
	st, p, err := s.decodeAt(raw)
	if err == nil {
		s.positions.advance(raw.subject, p)
	}
	return st, err
}
