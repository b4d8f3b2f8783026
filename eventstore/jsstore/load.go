package jsstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/amends-dev/amends/eventstore"
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
// streams.
func (s *Store) LoadLast(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error) {
	_, _, last, _, err := s.last(ctx, a)
	if err != nil {
		return eventstore.Stream{}, err
	}
	return s.decode(last)
}

// Load returns the aggregate's streams from version from (1 if 0) to the
// latest, in version order. It returns an error matching
// eventstore.ErrNotFound if the aggregate has no streams, and an empty
// slice if from is past the latest version.
func (s *Store) Load(ctx context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error) {
	from = max(from, 1)
	h, subj, last, p, err := s.last(ctx, a)
	if err != nil {
		return nil, err
	}
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
		msgs = make([]*rawMsg, 0, p.version-from+1)
		err = s.batchFrom(ctx, h, subj, p.firstSeq, func(m *rawMsg) (bool, error) {
			mp, err := m.pos()
			if err != nil {
				return false, err
			}
			if mp.version >= from {
				msgs = append(msgs, m)
			}
			return mp.version < p.version, nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]eventstore.Stream, len(msgs))
	for i, m := range msgs {
		if out[i], err = s.decode(m); err != nil {
			return nil, err
		}
		if out[i].Version != from+uint64(i) {
			return nil, fmt.Errorf("%s: expected version %d at sequence %d, found version %d: %w", a, from+uint64(i), m.seq, out[i].Version, ErrCorrupt)
		}
	}
	return out, nil
}

// LoadVersion returns the aggregate's stream at version v. It returns an
// error matching eventstore.ErrNotFound if the aggregate or that version
// does not exist.
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
		err = fmt.Errorf("%s: expected version %d at sequence %d, found version %d: %w", a, v, m.seq, st.Version, ErrCorrupt)
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
	m, err := s.lastMsg(ctx, h, subj)
	if errors.Is(err, eventstore.ErrNotFound) {
		return nil, "", nil, position{}, fmt.Errorf("aggregate %s has no streams: %w", a, eventstore.ErrNotFound)
	}
	if err != nil {
		return nil, "", nil, position{}, err
	}
	p, err := m.pos()
	if err != nil {
		return nil, "", nil, position{}, err
	}
	s.positions.put(subj, p)
	return h, subj, m, p, nil
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
			return nil, fmt.Errorf("%s version %d at sequence %d is missing: %w", subj, v, prevs[back-1], ErrCorrupt)
		}
		return m, err
	}
	var found *rawMsg
	err = s.batchFrom(ctx, h, subj, p.firstSeq, func(m *rawMsg) (bool, error) {
		mp, err := m.pos()
		if err != nil {
			return false, err
		}
		if mp.version == v {
			found = m
			return false, nil
		}
		return mp.version < v, nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("%s: version %d is missing from the stream: %w", subj, v, ErrCorrupt)
	}
	return found, nil
}

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
			return nil, fmt.Errorf("%s: the stream at sequence %d is missing: %w", h.name, seqs[i], ErrCorrupt)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LoadLastIfChanged returns the aggregate's latest stream and true, or, if
// that stream is still the one at sequence known, no stream and false
// without decoding it: one direct get either way. A caller that keeps what
// it decoded last uses it to skip the decoding. Errors as LoadLast.
func (s *Store) LoadLastIfChanged(ctx context.Context, a eventstore.AggregateID, known uint64) (eventstore.Stream, bool, error) {
	_, _, last, _, err := s.last(ctx, a)
	if err != nil {
		return eventstore.Stream{}, false, err
	}
	if known != 0 && last.seq == known {
		return eventstore.Stream{}, false, nil
	}
	st, err := s.decode(last)
	return st, err == nil, err
}
