package jsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
)

// Reads that never go back behind what this Store has seen committed:
// the last message of an aggregate, asked again of the stream leader when
// a replica answers with less (see the package documentation).

// last reads the aggregate's last message and remembers its position.
func (s *Store) last(ctx context.Context, a eventstore.AggregateID) (*streamHandle, string, *rawMsg, position, error) {
	if err := a.Validate(); err != nil {
		return nil, "", nil, position{}, err
	}
	h, err := s.stream(ctx, a.Context)
	if err != nil {
		return nil, "", nil, position{}, err
	}
	subj, err := subject(s.opts.subjectPrefix, a)
	if err != nil {
		return nil, "", nil, position{}, err
	}
	m, p, err := s.freshLast(ctx, h, subj, 0)
	if errors.Is(err, eventstore.ErrNotFound) {
		return nil, "", nil, position{}, fmt.Errorf("aggregate %s has no streams: %w", a, eventstore.ErrNotFound)
	}
	if err != nil {
		return nil, "", nil, position{}, err
	}
	return h, subj, m, p, nil
}

// freshLast reads the last message on subj with a direct get, which any
// replica may answer, and remembers its position. If the answer is older
// than what this Store has seen committed on subj (an append it made, a
// read it made, a conflict the leader reported), or older than sequence
// atLeast, or there is no answer although the Store knows a stream is
// there, the replica lags: the stream leader, which has every acknowledged
// write, is asked instead. So a read never goes back behind a write or read
// of this Store.
func (s *Store) freshLast(ctx context.Context, h *streamHandle, subj string, atLeast uint64) (*rawMsg, position, error) {
	if known, ok := s.positions.get(subj); ok {
		atLeast = max(atLeast, known.last())
	}
	m, err := s.lastMsg(ctx, h, subj)
	if errors.Is(err, eventstore.ErrNotFound) && atLeast > 0 || err == nil && m.seq < atLeast {
		s.laggingReads.Add(1)
		m, err = s.leaderLast(ctx, h, subj)
	}
	if err != nil {
		return nil, position{}, err
	}
	return s.readable(ctx, h, subj, m)
}

// errOnlySkipped: the subject's messages are all skipped (Skip): the
// aggregate has no stream yet.
var errOnlySkipped = fmt.Errorf("the aggregate's only messages are skipped ones: %w", eventstore.ErrNotFound)

// readable returns the aggregate's last message that loaders read, given
// the subject's last message m, and remembers its position: m, or the one
// before m when an operator skipped m (Skip); errOnlySkipped when there is
// none before it (the position then holds what appends expect).
func (s *Store) readable(ctx context.Context, h *streamHandle, subj string, m *rawMsg) (*rawMsg, position, error) {
	p, err := m.pos()
	if err == nil {
		if _, skipped := s.knownSkip(h.name, m.seq); !skipped {
			s.positions.put(subj, p)
			return m, p, nil
		}
		err = fmt.Errorf("message %d on %s is skipped", m.seq, subj)
	}
	pm, pp, err := s.passOver(ctx, h, subj, m, err)
	if err != nil {
		return nil, position{}, err
	}
	s.positions.put(subj, pp)
	if pm == nil {
		return nil, pp, errOnlySkipped
	}
	return pm, pp, nil
}

// decodeLast decodes m, the last message last() read, or, when its body
// does not decode and an operator skipped it, the one before it.
func (s *Store) decodeLast(ctx context.Context, h *streamHandle, subj string, m *rawMsg) (eventstore.Stream, error) {
	st, err := s.decode(m)
	if err == nil || !errors.Is(err, eventstore.ErrCorrupt) {
		return st, err
	}
	pm, _, perr := s.passOver(ctx, h, subj, m, err)
	if perr != nil {
		return eventstore.Stream{}, perr
	}
	if pm == nil {
		return eventstore.Stream{}, fmt.Errorf("aggregate on %s has no streams: %w", subj, errOnlySkipped)
	}
	return s.decode(pm)
}

// LoadLastFromLeader returns the aggregate's latest stream as the stream
// leader has it: a JetStream API request, slower than the direct get of
// LoadLast, but never answered by a replica that lags. Use it before
// acting on an answer that a lagging replica may have given (a rejection,
// a missing aggregate). Errors as LoadLast.
func (s *Store) LoadLastFromLeader(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error) {
	if err := a.Validate(); err != nil {
		return eventstore.Stream{}, err
	}
	h, err := s.stream(ctx, a.Context)
	if err != nil {
		return eventstore.Stream{}, err
	}
	subj, err := subject(s.opts.subjectPrefix, a)
	if err != nil {
		return eventstore.Stream{}, err
	}
	m, err := s.leaderLast(ctx, h, subj)
	if err == nil {
		m, _, err = s.readable(ctx, h, subj, m)
	}
	if errors.Is(err, eventstore.ErrNotFound) {
		return eventstore.Stream{}, fmt.Errorf("aggregate %s has no streams: %w", a, eventstore.ErrNotFound)
	}
	if err != nil {
		return eventstore.Stream{}, err
	}
	return s.decodeLast(ctx, h, subj, m)
}

// LoadLastIfChanged returns the aggregate's latest stream and true, or, if
// that stream is still the one at sequence known, no stream and false
// without decoding it: usually one direct get either way. A caller that
// keeps what it decoded last uses it to skip the decoding. When this Store
// knows known as the aggregate's position (it appended or read that
// stream, or a consumer delivered it), the direct get asks only for a
// message after known, so an unchanged aggregate costs a not-found answer
// instead of its last message. A direct get
// that answers with a message before known (a replica that lags) is never
// taken for a change: the stream leader is asked instead. Errors as
// LoadLast, and eventstore.ErrCorrupt if even the leader has nothing as recent as
// known.
func (s *Store) LoadLastIfChanged(ctx context.Context, a eventstore.AggregateID, known uint64) (eventstore.Stream, bool, error) {
	if err := a.Validate(); err != nil {
		return eventstore.Stream{}, false, err
	}
	h, err := s.stream(ctx, a.Context)
	if err != nil {
		return eventstore.Stream{}, false, err
	}
	subj, err := subject(s.opts.subjectPrefix, a)
	if err != nil {
		return eventstore.Stream{}, false, err
	}
	if unchanged, err := s.nothingAfter(ctx, h, subj, known); unchanged || err != nil {
		return eventstore.Stream{}, false, err
	}
	// An answer older than known comes from a lagging replica, never from
	// a change: freshLast asks the leader then.
	last, _, err := s.freshLast(ctx, h, subj, known)
	if errors.Is(err, eventstore.ErrNotFound) {
		return eventstore.Stream{}, false, fmt.Errorf("aggregate %s has no streams: %w", a, eventstore.ErrNotFound)
	}
	if err != nil {
		return eventstore.Stream{}, false, err
	}
	if last.seq < known {
		return eventstore.Stream{}, false, fmt.Errorf("%s: the stream leader's last message is %d, before the known message %d: %w", subj, last.seq, known, eventstore.ErrCorrupt)
	}
	if known != 0 && last.seq == known {
		return eventstore.Stream{}, false, nil
	}
	st, err := s.decodeLast(ctx, h, subj, last)
	return st, err == nil, err
}

// nothingAfter reports whether subj has no message after known, which this
// Store knows as the subject's last position: one direct get of the next
// message, which usually finds none. A replica that lags may miss a newer
// message, as a direct get of the last one may. It reports false, for the
// caller to read the last message, when the Store does not know known as
// the position or when a message follows.
func (s *Store) nothingAfter(ctx context.Context, h *streamHandle, subj string, known uint64) (bool, error) {
	if p, ok := s.positions.get(subj); known == 0 || !ok || p.seq != known || p.expect != 0 {
		return false, nil
	}
	_, err := h.stream.GetMsg(ctx, known+1, jetstream.WithGetMsgSubject(subj))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("get the message after %d on %s: %w", known, subj, err)
	}
	return false, nil
}
