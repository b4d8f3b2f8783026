package eventstoretest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/eventstoretest"
)

// memStore is a minimal in-memory eventstore.Store, written from the
// contract alone: that it passes the suite shows the suite asks for the
// contract, not for how jsstore keeps it.
type memStore struct {
	max int // the largest document

	mu   sync.Mutex
	logs map[string][]entry // by context; entry i has sequence i+1
	last map[eventstore.AggregateID]uint64
}

// entry is one stored document; version is 0 for a raw write.
type entry struct {
	a       eventstore.AggregateID
	version uint64
	prevSeq uint64
	id      string
	data    []byte
}

// memMsg is what a subscriber of a memStore receives.
type memMsg struct {
	context string
	seq     uint64
	e       entry
}

var _ eventstore.Store[memMsg] = (*memStore)(nil)

func newMemStore(max int) *memStore {
	return &memStore{max: max, logs: map[string][]entry{}, last: map[eventstore.AggregateID]uint64{}}
}

func (s *memStore) Provision(_ context.Context, contexts ...string) error {
	for _, c := range contexts {
		if err := eventstore.ValidateName("context", c); err != nil {
			return err
		}
	}
	return nil
}

func (s *memStore) StreamName(c string) string { return "mem-" + c }

func (s *memStore) FilterSubject(c, typ string) string { return c + "/" + typ }

func (s *memStore) Subject(a eventstore.AggregateID) (string, error) {
	if err := a.Validate(); err != nil {
		return "", err
	}
	return a.String(), nil
}

func (s *memStore) Replicas() int { return 1 }

func (s *memStore) DecodeMsg(m memMsg) (eventstore.Stream, error) {
	return decodeEntry(m.seq, m.e)
}

func decodeEntry(seq uint64, e entry) (eventstore.Stream, error) {
	if e.version == 0 {
		return eventstore.Stream{}, fmt.Errorf("entry %d was not written by the store: %w", seq, eventstore.ErrCorrupt)
	}
	st, err := eventstore.Decode(e.data)
	if err != nil || st.Aggregate != e.a || st.Version != e.version {
		return eventstore.Stream{}, fmt.Errorf("entry %d does not decode to %s version %d: %v: %w", seq, e.a, e.version, err, eventstore.ErrCorrupt)
	}
	st.Seq, st.PrevSeq = seq, e.prevSeq
	return st, nil
}

func (s *memStore) Append(_ context.Context, st eventstore.Stream, expected uint64) (eventstore.Stream, error) {
	if st.Version == 0 {
		st.Version = expected + 1
	}
	if st.CreateTime == 0 {
		st.CreateTime = 1
	}
	if st.CreateTime < 0 || st.Version != expected+1 {
		return eventstore.Stream{}, fmt.Errorf("stream version %d createTime %d for an append at %d: %w", st.Version, st.CreateTime, expected, eventstore.ErrInvalid)
	}
	data, err := eventstore.Encode(&st)
	if err != nil {
		return eventstore.Stream{}, err
	}
	if len(data) >= s.max {
		return eventstore.Stream{}, fmt.Errorf("stream is %d bytes, over the limit of %d: %w", len(data), s.max, eventstore.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.logs[st.Aggregate.Context]
	for i, e := range log {
		if e.id == st.ID && e.version != 0 {
			if e.a == st.Aggregate && e.version == st.Version {
				return decodeEntry(uint64(i+1), e)
			}
			return eventstore.Stream{}, fmt.Errorf("stream id %q is used: %w", st.ID, eventstore.ErrInvalid)
		}
	}
	lastSeq := s.last[st.Aggregate]
	var at uint64
	if lastSeq > 0 {
		e := log[lastSeq-1]
		if e.version == 0 {
			return eventstore.Stream{}, fmt.Errorf("%s ends in a corrupt entry %d: %w", st.Aggregate, lastSeq, eventstore.ErrCorrupt)
		}
		at = e.version
	}
	if at != expected {
		return eventstore.Stream{}, &eventstore.ConflictError{Aggregate: st.Aggregate, Expected: expected, Actual: at}
	}
	e := entry{a: st.Aggregate, version: st.Version, id: st.ID, data: data}
	if expected > 0 {
		e.prevSeq = lastSeq
	}
	s.logs[st.Aggregate.Context] = append(log, e)
	s.last[st.Aggregate] = uint64(len(log) + 1)
	st.Seq, st.PrevSeq = uint64(len(log)+1), e.prevSeq
	return st, nil
}

// history returns a's entries' sequences, newest first, from its last.
func (s *memStore) history(a eventstore.AggregateID) ([]uint64, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.last[a]
	if seq == 0 {
		return nil, fmt.Errorf("%s: %w", a, eventstore.ErrNotFound)
	}
	var out []uint64
	for seq > 0 {
		out = append(out, seq)
		seq = s.logs[a.Context][seq-1].prevSeq
	}
	return out, nil
}

func (s *memStore) entry(c string, seq uint64) (entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.logs[c]
	if seq > uint64(len(log)) {
		return entry{}, fmt.Errorf("%s has no entry %d: %w", c, seq, eventstore.ErrNotFound)
	}
	return log[seq-1], nil
}

func (s *memStore) read(a eventstore.AggregateID, seqs []uint64, from uint64) ([]eventstore.Stream, error) {
	var out []eventstore.Stream
	for i := len(seqs) - 1; i >= 0; i-- {
		e, err := s.entry(a.Context, seqs[i])
		if err != nil {
			return nil, err
		}
		st, err := decodeEntry(seqs[i], e)
		if err != nil {
			return nil, err
		}
		if st.Version >= max(from, 1) {
			out = append(out, st)
		}
	}
	return out, nil
}

func (s *memStore) Load(_ context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error) {
	seqs, err := s.history(a)
	if err != nil {
		return nil, err
	}
	return s.read(a, seqs, from)
}

func (s *memStore) LoadLast(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error) {
	seqs, err := s.history(a)
	if err != nil {
		return eventstore.Stream{}, err
	}
	e, err := s.entry(a.Context, seqs[0])
	if err != nil {
		return eventstore.Stream{}, err
	}
	return decodeEntry(seqs[0], e)
}

func (s *memStore) LoadAt(_ context.Context, a eventstore.AggregateID, from, seq uint64) ([]eventstore.Stream, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if seq == 0 {
		return nil, fmt.Errorf("sequence 0: %w", eventstore.ErrInvalid)
	}
	e, err := s.entry(a.Context, seq)
	if err != nil {
		return nil, err
	}
	if e.a != a {
		return nil, fmt.Errorf("entry %d is not %s's: %w", seq, a, eventstore.ErrCorrupt)
	}
	seqs := []uint64{seq}
	for p := e.prevSeq; p > 0; {
		seqs = append(seqs, p)
		pe, err := s.entry(a.Context, p)
		if err != nil {
			return nil, err
		}
		p = pe.prevSeq
	}
	return s.read(a, seqs, from)
}

func (s *memStore) LoadVersion(ctx context.Context, a eventstore.AggregateID, v uint64) (eventstore.Stream, error) {
	if v == 0 {
		return eventstore.Stream{}, fmt.Errorf("version 0: %w", eventstore.ErrInvalid)
	}
	all, err := s.Load(ctx, a, v)
	if err != nil {
		return eventstore.Stream{}, err
	}
	if len(all) == 0 {
		return eventstore.Stream{}, fmt.Errorf("%s has no version %d: %w", a, v, eventstore.ErrNotFound)
	}
	return all[0], nil
}

func (s *memStore) LastVersion(ctx context.Context, a eventstore.AggregateID) (uint64, error) {
	st, err := s.LoadLast(ctx, a)
	return st.Version, err
}

func (s *memStore) GetSeq(_ context.Context, c string, seq uint64) (eventstore.Stream, error) {
	if err := eventstore.ValidateName("context", c); err != nil {
		return eventstore.Stream{}, err
	}
	if seq == 0 {
		return eventstore.Stream{}, fmt.Errorf("sequence 0: %w", eventstore.ErrInvalid)
	}
	e, err := s.entry(c, seq)
	if err != nil {
		return eventstore.Stream{}, err
	}
	return decodeEntry(seq, e)
}

// writeRaw appends data at a's place as no Append would.
func (s *memStore) writeRaw(_ context.Context, a eventstore.AggregateID, data []byte) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := append(s.logs[a.Context], entry{a: a, prevSeq: s.last[a], data: data})
	s.logs[a.Context] = log
	s.last[a] = uint64(len(log))
	return uint64(len(log)), nil
}

// subscribe returns the entries of c (of type typ) from sequence from.
func (s *memStore) subscribe(ctx context.Context, c, typ string, from uint64, n int) ([]memMsg, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []memMsg
	for i := max(from, 1) - 1; i < uint64(len(s.logs[c])) && len(out) < n; i++ {
		if e := s.logs[c][i]; typ == "" || e.a.Type == typ {
			out = append(out, memMsg{context: c, seq: i + 1, e: e})
		}
	}
	if len(out) < n {
		return out, errors.New("fewer messages than asked for")
	}
	return out, ctx.Err()
}

func TestMemStoreConforms(t *testing.T) {
	eventstoretest.Run(t, func(t *testing.T) eventstoretest.Harness[memMsg] {
		s := newMemStore(2048)
		return eventstoretest.Harness[memMsg]{Store: s, Subscribe: s.subscribe, WriteRaw: s.writeRaw, MaxStreamBytes: 2048,
			SubjectOf: func(m memMsg) string { return m.e.a.String() }}
	})
}
