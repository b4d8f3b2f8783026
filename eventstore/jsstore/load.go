package jsstore

import (
	"context"
	"errors"
	"fmt"

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
