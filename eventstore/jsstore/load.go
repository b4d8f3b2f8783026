package jsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/amends-dev/amends/eventstore"
)

// walkLimit is the most streams Load reads one by one, following each
// message's previous-sequence header back from the last. Longer runs use
// batch direct gets from the aggregate's first sequence. Measured in
// BenchmarkLoadStrategies: on a busy stream a direct get by sequence costs
// one round trip, while a batch get walks the stream from its start
// sequence, which is slower for a few streams spread far apart.
const walkLimit = 16

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
	msgs := make([]*rawMsg, 0, p.version-from+1)
	if p.version-from < walkLimit {
		for m := last; ; {
			msgs = append(msgs, m)
			if uint64(len(msgs)) == p.version-from+1 {
				break
			}
			prev, err := s.msgAt(ctx, h, m.prevSeq())
			if err != nil {
				return nil, s.brokenChain(m, err)
			}
			m = prev
		}
		slices.Reverse(msgs)
	} else {
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
	return s.decode(m)
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
	if p.version-v < walkLimit {
		m := last
		for cur := p.version; cur > v; cur-- {
			prev, err := s.msgAt(ctx, h, m.prevSeq())
			if err != nil {
				return nil, fmt.Errorf("%s version %d: %w", subj, cur-1, s.brokenChain(m, err))
			}
			m = prev
		}
		return m, nil
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

func (s *Store) brokenChain(m *rawMsg, err error) error {
	if errors.Is(err, eventstore.ErrNotFound) {
		return fmt.Errorf("%s: the stream before sequence %d (previous sequence %d) is missing: %w", m.subject, m.seq, m.prevSeq(), ErrCorrupt)
	}
	return err
}
