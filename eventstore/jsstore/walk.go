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

// Reading earlier versions: by the previous sequences a message lists,
// or by walking the aggregate's messages from its first stream.

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
