package jsstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/wait"
)

// Reading an aggregate: its last message lists the sequences of up to
// maxPrevSeqs earlier streams (HeaderPrevSeqs), so a load of that many
// versions is one direct get of the last message followed by direct gets
// by sequence sent at once. Longer runs use batch direct gets from the
// aggregate's first sequence (HeaderFirstSeq), which walk the stream on the
// server: measured in BenchmarkLoad, that is several times slower than
// direct gets for a few streams spread through a busy stream.

// LoadLast returns the aggregate's latest stream: one direct get. It
// returns an error matching eventstore.ErrNotFound if the aggregate has no
// streams, and one matching eventstore.ErrCorrupt if its last message is not a stream
// amends wrote there.
func (s *Store) LoadLast(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error) {
	h, subj, last, _, err := s.last(ctx, a)
	if err != nil {
		return eventstore.Stream{}, err
	}
	return s.decodeLast(ctx, h, subj, last)
}

// Load returns the aggregate's streams from version from (1 if 0) to the
// latest, in version order. It returns an error matching
// eventstore.ErrNotFound if the aggregate has no streams, an empty slice if
// from is past the latest version, and an error matching eventstore.ErrCorrupt if a
// message of the history is inconsistent with its place (see the package
// documentation). Memory is bounded by the messages actually read.
func (s *Store) Load(ctx context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error) {
	h, subj, last, p, err := s.last(ctx, a)
	if err != nil {
		return nil, err
	}
	return s.history(ctx, h, subj, last, p, from)
}

// LoadAt returns the aggregate's streams from version from (1 if 0) to the
// one stored at sequence seq, in version order, whatever was appended
// after it: the history as of that stream, in as many round trips as Load.
// It returns an error matching eventstore.ErrNotFound if the stream has no
// message at seq, one matching eventstore.ErrCorrupt if that message is not the
// aggregate's or its history is inconsistent (as Load), and an empty slice
// if from is past its version.
func (s *Store) LoadAt(ctx context.Context, a eventstore.AggregateID, from, seq uint64) ([]eventstore.Stream, error) {
	if seq == 0 {
		return nil, fmt.Errorf("load %s at sequence 0: sequences start at 1: %w", a, eventstore.ErrInvalid)
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	h, err := s.stream(ctx, a.Context)
	if err != nil {
		return nil, err
	}
	subj, err := subject(s.opts.subjectPrefix, a)
	if err != nil {
		return nil, err
	}
	m, err := s.msgAt(ctx, h, seq)
	if errors.Is(err, eventstore.ErrNotFound) {
		return nil, fmt.Errorf("stream %s has no message at sequence %d: %w", h.name, seq, eventstore.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if m.subject != subj {
		return nil, fmt.Errorf("%s: the message at sequence %d is on %s: %w", subj, seq, m.subject, eventstore.ErrCorrupt)
	}
	p, err := m.pos()
	if err != nil {
		return nil, err
	}
	return s.history(ctx, h, subj, m, p, from)
}

// history reads the streams from version from to last, whose position is p.
func (s *Store) history(ctx context.Context, h *streamHandle, subj string, last *rawMsg, p position, from uint64) ([]eventstore.Stream, error) {
	from = max(from, 1)
	var err error
	if from > p.version {
		return nil, nil
	}
	var msgs []*rawMsg
	if p.version-from <= maxPrevSeqs {
		prevs, err := p.prevSeqs(subj)
		if err != nil {
			return nil, err
		}
		// prevs is newest first; read the ones at or after from, oldest first.
		n := int(p.version - from)
		seqs := make([]uint64, n)
		for i := range n {
			seqs[i] = prevs[n-1-i]
		}
		if msgs, err = s.msgsAt(ctx, h, seqs); err != nil {
			return nil, err
		}
		msgs = append(msgs, last)
	} else {
		// The capacity is bounded: p.version is only known to be below the
		// stream's last sequence, and the walk stops at what it reads.
		msgs = make([]*rawMsg, 0, min(p.version-from+1, batchSize))
		err = s.walk(ctx, h, subj, p, func(m *rawMsg, v uint64) bool {
			if v >= from {
				msgs = append(msgs, m)
			}
			return v < p.version
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]eventstore.Stream, len(msgs))
	for i, m := range msgs {
		if err := m.at(subj, p.firstSeq, from+uint64(i)); err != nil {
			return nil, err
		}
		if out[i], err = s.decode(m); err != nil {
			if i == len(msgs)-1 && errors.Is(err, eventstore.ErrCorrupt) {
				// The last message's body does not decode: read the history
				// up to the one before it if an operator skipped it.
				if pm, pp, perr := s.passOver(ctx, h, subj, m, err); perr == nil {
					if pm == nil {
						return nil, errOnlySkipped
					}
					return s.history(ctx, h, subj, pm, pp, from)
				}
			}
			return nil, err
		}
	}
	return out, nil
}

// LoadVersion returns the aggregate's stream at version v. It returns an
// error matching eventstore.ErrNotFound if the aggregate or that version
// does not exist, and one matching eventstore.ErrCorrupt as Load.
func (s *Store) LoadVersion(ctx context.Context, a eventstore.AggregateID, v uint64) (eventstore.Stream, error) {
	if v == 0 {
		return eventstore.Stream{}, fmt.Errorf("load %s version 0: versions start at 1: %w", a, eventstore.ErrInvalid)
	}
	h, subj, last, p, err := s.last(ctx, a)
	if err != nil {
		return eventstore.Stream{}, err
	}
	if v > p.version {
		return eventstore.Stream{}, fmt.Errorf("%s is at version %d and has no version %d: %w", a, p.version, v, eventstore.ErrNotFound)
	}
	m, err := s.findVersion(ctx, h, subj, last, v)
	if err != nil {
		return eventstore.Stream{}, err
	}
	st, err := s.decode(m)
	if err == nil && st.Version != v {
		err = fmt.Errorf("%s: expected version %d at sequence %d, found version %d: %w", a, v, m.seq, st.Version, eventstore.ErrCorrupt)
	}
	return st, err
}

// GetSeq returns the stream stored at sequence seq of context's stream: one
// direct get, the fast path for replaying a recorded event. It returns an
// error matching eventstore.ErrNotFound if there is no such message.
func (s *Store) GetSeq(ctx context.Context, context string, seq uint64) (eventstore.Stream, error) {
	if seq == 0 {
		return eventstore.Stream{}, fmt.Errorf("get sequence 0 of %s: sequences start at 1: %w", context, eventstore.ErrInvalid)
	}
	h, err := s.stream(ctx, context)
	if err != nil {
		return eventstore.Stream{}, err
	}
	m, err := s.msgAt(ctx, h, seq)
	if errors.Is(err, eventstore.ErrNotFound) {
		return eventstore.Stream{}, fmt.Errorf("stream %s has no message at sequence %d: %w", h.name, seq, eventstore.ErrNotFound)
	}
	if err != nil {
		return eventstore.Stream{}, err
	}
	return s.decode(m)
}

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

// findVersion returns the message of version v, given the aggregate's last
// message.
func (s *Store) findVersion(ctx context.Context, h *streamHandle, subj string, last *rawMsg, v uint64) (*rawMsg, error) {
	p, err := last.pos()
	if err != nil {
		return nil, err
	}
	if v == p.version {
		return last, nil
	}
	if back := p.version - v; back <= maxPrevSeqs {
		prevs, err := p.prevSeqs(subj)
		if err != nil {
			return nil, err
		}
		m, err := s.msgAt(ctx, h, prevs[back-1])
		if errors.Is(err, eventstore.ErrNotFound) {
			return nil, fmt.Errorf("%s version %d at sequence %d is missing: %w", subj, v, prevs[back-1], eventstore.ErrCorrupt)
		}
		if err != nil {
			return nil, err
		}
		if err := m.at(subj, p.firstSeq, v); err != nil {
			return nil, err
		}
		return m, nil
	}
	var found *rawMsg
	err = s.walk(ctx, h, subj, p, func(m *rawMsg, mv uint64) bool {
		if mv == v {
			found = m
			return false
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("%s: version %d is missing from the stream: %w", subj, v, eventstore.ErrCorrupt)
	}
	return found, nil
}

// walk reads the aggregate's messages on subj from its first stream on, in
// pages of batchSize, checking that each is the next version (1, 2, ...)
// up to p, the aggregate's last known stream. It calls fn with each message
// and its version until fn returns false or version p.version was read.
// The walk reads only what the stream holds and stops at p's sequence, so
// its length is bounded by the stream, never by a number in a header.
//
// A batch direct get may be answered by a replica that has not yet applied
// the last messages up to p: a walk that ends before p's sequence resumes
// where it stopped, a few times, before the history counts as corrupt.
func (s *Store) walk(ctx context.Context, h *streamHandle, subj string, p position, fn func(m *rawMsg, v uint64) bool) error {
	next, done, from := uint64(1), false, p.firstSeq
	for attempt := 0; ; attempt++ {
		err := s.batchFrom(ctx, h, subj, from, func(m *rawMsg) (bool, error) {
			if m.seq > p.seq {
				return false, fmt.Errorf("%s: version %d is missing between sequences %d and %d: %w", subj, next, p.firstSeq, p.seq, eventstore.ErrCorrupt)
			}
			if err := m.at(subj, p.firstSeq, next); err != nil {
				if _, skipped, serr := s.skipped(ctx, h, m.seq); serr == nil && skipped {
					from = m.seq + 1
					return true, nil // an operator skipped it: not one of the versions
				}
				return false, err
			}
			if next == p.version && m.seq != p.seq {
				return false, fmt.Errorf("%s: version %d is at sequence %d and at %d: %w", subj, next, m.seq, p.seq, eventstore.ErrCorrupt)
			}
			done = !fn(m, next) || next == p.version
			next++
			from = m.seq + 1
			return !done, nil
		})
		if err != nil || done {
			return err
		}
		if attempt >= laggingRetries {
			return fmt.Errorf("%s: version %d is missing between sequences %d and %d: %w", subj, next, p.firstSeq, p.seq, eventstore.ErrCorrupt)
		}
		s.laggingReads.Add(1)
		if err := wait.Sleep(ctx, time.Duration(attempt+1)*5*time.Millisecond); err != nil {
			return err
		}
	}
}

// laggingRetries is how many times a batch read that stopped short of a
// message known to exist is resumed: replicas apply a write within
// milliseconds of the leader.
const laggingRetries = 4

// msgsAt reads the messages at seqs with direct gets sent at once, and
// returns them in the order of seqs.
func (s *Store) msgsAt(ctx context.Context, h *streamHandle, seqs []uint64) ([]*rawMsg, error) {
	out := make([]*rawMsg, len(seqs))
	errs := make([]error, len(seqs))
	var wg sync.WaitGroup
	for i, seq := range seqs {
		wg.Go(func() { out[i], errs[i] = s.msgAt(ctx, h, seq) })
	}
	wg.Wait()
	for i, err := range errs {
		if errors.Is(err, eventstore.ErrNotFound) {
			return nil, fmt.Errorf("%s: the stream at sequence %d is missing: %w", h.name, seqs[i], eventstore.ErrCorrupt)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LoadLastIfChanged returns the aggregate's latest stream and true, or, if
// that stream is still the one at sequence known, no stream and false
// without decoding it: usually one direct get either way. A caller that
// keeps what it decoded last uses it to skip the decoding. A direct get
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

// LastVersion returns the aggregate's latest version: one direct get of
// its last message, whose headers tell the version, nothing decoded.
// Errors as LoadLast.
func (s *Store) LastVersion(ctx context.Context, a eventstore.AggregateID) (uint64, error) {
	_, _, _, p, err := s.last(ctx, a)
	if err != nil {
		return 0, err
	}
	return p.version, nil
}
