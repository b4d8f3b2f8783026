package jsstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/wait"
	"github.com/amends-dev/amends/tracing"
)

// unavailableRetries bounds retries of JetStream's "expected last sequence
// per subject temporarily unavailable" (10163), which a replicated stream
// returns while its leader catches up. Nothing was written when it occurs.
const unavailableRetries = 5

// Append stores st as the aggregate's version expectedVersion+1, atomically.
// st.Version must be 0 (it is then set) or expectedVersion+1.
//
// It publishes one message with Nats-Expected-Last-Subject-Sequence set to
// the sequence of the expected version (0 for a new aggregate) and
// Nats-Msg-Id set to st.ID. If the aggregate is at another version, nothing
// is written and the error is an *eventstore.ConflictError matching
// eventstore.ErrConflict. If the aggregate already holds a stream with
// st.ID at that version (the same append retried after a lost
// acknowledgement), Append returns that committed stream and no error.
//
// A CreateTime of 0 is set to the store's clock (WithClock); a negative one
// is refused. The returned stream has Seq set. Invalid streams, and streams whose
// document exceeds the max message size, return an error matching
// eventstore.ErrInvalid that names the field or the limit.
func (s *Store) Append(ctx context.Context, st eventstore.Stream, expectedVersion uint64) (eventstore.Stream, error) {
	return s.append(ctx, st, expectedVersion, false)
}

// append is Append; retried is set on the one retry of a first stream
// after skipped messages (see resolveConflict).
func (s *Store) append(ctx context.Context, st eventstore.Stream, expectedVersion uint64, retried bool) (eventstore.Stream, error) {
	if st.Version == 0 {
		st.Version = expectedVersion + 1
	}
	switch {
	case st.CreateTime == 0:
		st.CreateTime = s.opts.now().UnixMilli()
	case st.CreateTime < 0:
		return eventstore.Stream{}, fmt.Errorf("stream %q createTime is %d; it must be epoch milliseconds after 1970, or 0 for now: %w",
			st.ID, st.CreateTime, eventstore.ErrInvalid)
	}
	if st.Version != expectedVersion+1 {
		return eventstore.Stream{}, fmt.Errorf("stream %q has version %d but the append expects version %d, so it must be %d: %w",
			st.ID, st.Version, expectedVersion, expectedVersion+1, eventstore.ErrInvalid)
	}
	data, err := eventstore.Encode(&st)
	if err != nil {
		return eventstore.Stream{}, err
	}
	h, err := s.stream(ctx, st.Aggregate.Context)
	if err != nil {
		return eventstore.Stream{}, err
	}
	subj, err := subject(s.opts.subjectPrefix, st.Aggregate)
	if err != nil {
		return eventstore.Stream{}, err
	}
	prev, err := s.expected(ctx, h, subj, st.Aggregate, expectedVersion)
	if ce := (*eventstore.ConflictError)(nil); errors.As(err, &ce) && ce.Actual >= st.Version {
		// The aggregate is past our version: maybe our own earlier attempt.
		return s.resolveConflict(ctx, h, subj, st, expectedVersion, retried)
	}
	if err != nil {
		return eventstore.Stream{}, err
	}

	msg := nats.NewMsg(subj)
	msg.Data = data
	msg.Header[jetstream.MsgIDHeader] = []string{st.ID}
	msg.Header[jetstream.ExpectedLastSubjSeqHeader] = []string{strconv.FormatUint(prev.last(), 10)}
	msg.Header[HeaderVersion] = []string{strconv.FormatUint(st.Version, 10)}
	first, prevs := uint64(0), ""
	if expectedVersion > 0 {
		first, prevs = prev.firstSeq, prev.nextPrevs()
		msg.Header[HeaderPrevSeqs] = []string{prevs}
		msg.Header[HeaderFirstSeq] = []string{strconv.FormatUint(first, 10)}
	}
	tracing.Inject(ctx, msg.Header) // the caller's trace context (traceparent, tracestate)
	st.TraceParent, st.TraceState = tracing.Header(msg.Header)

	if size := len(data) + headerSize(msg.Header); size > int(s.opts.maxMsgSize) {
		return eventstore.Stream{}, fmt.Errorf("stream %q of %s is %d bytes with headers; the store's max message size is %d (WithMaxMsgSize): %w",
			st.ID, st.Aggregate, size, s.opts.maxMsgSize, eventstore.ErrInvalid)
	}

	var ack *jetstream.PubAck
	for attempt := 0; ; attempt++ {
		ack, err = s.js.PublishMsg(ctx, msg)
		if err == nil {
			break
		}
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) {
			return eventstore.Stream{}, fmt.Errorf("append %s version %d: %w", st.Aggregate, st.Version, err)
		}
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequence, jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			s.positions.forget(subj)
			return s.resolveConflict(ctx, h, subj, st, expectedVersion, retried)
		case 10163: // expected last sequence per subject temporarily unavailable
			if attempt < unavailableRetries {
				if err := wait.Sleep(ctx, time.Duration(attempt+1)*10*time.Millisecond); err != nil {
					return eventstore.Stream{}, err
				}
				continue
			}
		}
		return eventstore.Stream{}, fmt.Errorf("append %s version %d: %w", st.Aggregate, st.Version, err)
	}
	if ack.Duplicate {
		// JetStream saw this stream id within the duplicate window and
		// stored nothing: it is ours only if it sits at our subject and version.
		return s.checkDuplicate(ctx, h, subj, st, ack.Sequence)
	}
	if first == 0 {
		first = ack.Sequence
	}
	var prevSeq uint64
	if expectedVersion > 0 {
		prevSeq = prev.seq // the head of prevs
	}
	s.positions.put(subj, position{version: st.Version, seq: ack.Sequence, firstSeq: first, prevs: prevs, prevSeq: prevSeq})
	st.Seq, st.PrevSeq = ack.Sequence, prevSeq
	return st, nil
}

// expected returns the position of version v of the aggregate on subj, from
// the cache when it knows exactly that version, else from the last message.
func (s *Store) expected(ctx context.Context, h *streamHandle, subj string, a eventstore.AggregateID, v uint64) (position, error) {
	if v == 0 {
		if p, ok := s.positions.get(subj); ok && p.version == 0 {
			return p, nil // only skipped messages on the subject: append after them
		}
		return position{}, nil
	}
	if p, ok := s.positions.get(subj); ok && p.version == v {
		return p, nil
	}
	_, p, err := s.freshLast(ctx, h, subj, 0)
	if errors.Is(err, eventstore.ErrNotFound) {
		return position{}, &eventstore.ConflictError{Aggregate: a, Expected: v}
	}
	if err != nil {
		return position{}, err
	}
	if p.version != v {
		return position{}, &eventstore.ConflictError{Aggregate: a, Expected: v, Actual: p.version}
	}
	return p, nil
}

// resolveConflict tells a lost race from a retried append that already
// committed: if the stream at st.Version has st.ID, the append succeeded
// before and its stream is returned.
func (s *Store) resolveConflict(ctx context.Context, h *streamHandle, subj string, st eventstore.Stream, expected uint64, retried bool) (eventstore.Stream, error) {
	last, err := s.leaderLast(ctx, h, subj)
	var p position
	if err == nil {
		last, p, err = s.readable(ctx, h, subj, last)
	}
	if errors.Is(err, errOnlySkipped) && expected == 0 && !retried {
		// The subject holds only skipped messages: append after them.
		return s.append(ctx, st, expected, true)
	}
	if errors.Is(err, eventstore.ErrNotFound) {
		return eventstore.Stream{}, &eventstore.ConflictError{Aggregate: st.Aggregate, Expected: expected}
	}
	if err != nil {
		return eventstore.Stream{}, err
	}
	conflict := &eventstore.ConflictError{Aggregate: st.Aggregate, Expected: expected, Actual: p.version}
	if p.version < st.Version {
		return eventstore.Stream{}, conflict
	}
	m := last
	if p.version > st.Version {
		if m, err = s.findVersion(ctx, h, subj, last, st.Version); err != nil {
			return eventstore.Stream{}, err
		}
	}
	if m.header.Get(jetstream.MsgIDHeader) != st.ID {
		return eventstore.Stream{}, conflict
	}
	return s.decode(m)
}

// headerSize is the encoded size of h as NATS sends it.
func headerSize(h nats.Header) int {
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// checkDuplicate returns the stream stored at seq if it is st committed
// before, and an error matching eventstore.ErrInvalid if the stream id was
// used by another stream.
func (s *Store) checkDuplicate(ctx context.Context, h *streamHandle, subj string, st eventstore.Stream, seq uint64) (eventstore.Stream, error) {
	m, err := s.msgAt(ctx, h, seq)
	if err != nil {
		return eventstore.Stream{}, fmt.Errorf("append %s: check duplicate stream id %q at sequence %d: %w", st.Aggregate, st.ID, seq, err)
	}
	committed, err := s.decode(m)
	if err != nil {
		return eventstore.Stream{}, err
	}
	if m.subject != subj || committed.Version != st.Version {
		return eventstore.Stream{}, fmt.Errorf("stream id %q was already used by %s version %d within the duplicate window; stream ids must be unique: %w",
			st.ID, committed.Aggregate, committed.Version, eventstore.ErrInvalid)
	}
	return committed, nil
}
