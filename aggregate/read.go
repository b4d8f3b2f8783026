// Reading a record: Get, GetAtLeast, and the loads Execute shares with them.

package aggregate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/wait"
)

// Get returns record id and its version. A missing record returns an
// *Error matching ErrNotFound.
//
// Get never returns a version older than one this Service has committed
// or read before, and on a store that may answer from a lagging replica
// it asks the stream leader before it reports a record missing.
func (s *Service) Get(ctx context.Context, id string) (State, uint64, error) {
	if err := checkRecordID(id); err != nil {
		return State{}, 0, err
	}
	snap, version, err := s.load(ctx, id, false)
	if err == nil && version == 0 && s.readsReplicas() {
		// Once, without waiting: unlike GetAtLeast, nothing says it exists.
		snap, version, err = s.load(ctx, id, true)
	}
	return found(id, snap, version, err)
}

// GetAtLeast is Get for a caller that knows version v of the record was
// committed (it holds the message of that version, say): if the usual
// read returns an older version, or none, the stream leader is asked. A
// consumer may deliver a message a moment before the stream leader has
// applied it, so the leader is asked a few times over about 100 ms; then
// its answer is returned whatever it is, and a caller that gets a version
// below v should try again later rather than act on it. With v 0 the
// leader is never asked.
func (s *Service) GetAtLeast(ctx context.Context, id string, v uint64) (State, uint64, error) {
	if err := checkRecordID(id); err != nil {
		return State{}, 0, err
	}
	snap, version, err := s.load(ctx, id, false)
	for attempt := 0; err == nil && version < v && s.readsReplicas() && attempt < leaderRetries; attempt++ {
		if attempt > 0 {
			if err = wait.Sleep(ctx, time.Duration(attempt)*10*time.Millisecond); err != nil {
				break
			}
		}
		snap, version, err = s.load(ctx, id, true)
	}
	return found(id, snap, version, err)
}

// GetDelivered is GetAtLeast for st, a stream of a record that a consumer
// delivered: it returns the record whose id st names, at st's version or
// later. When the store reports that st is still the record's last stream
// (*jsstore.Store then asks only for a message after st, and usually finds
// none), the state st carries is returned and cached, so the record is not
// read again, nor before the next command on it. Otherwise, or for a
// stream that carries no usable state, the record is read as GetAtLeast
// reads it.
//
// A stream of another aggregate type, or with an invalid id, returns an
// *Error matching ErrIllegalArgument; otherwise errors as GetAtLeast. Safe
// for concurrent use.
func (s *Service) GetDelivered(ctx context.Context, st eventstore.Stream) (State, uint64, error) {
	id := st.Aggregate.ID
	if err := checkRecordID(id); err != nil {
		return State{}, 0, err
	}
	if st.Aggregate != RecordAggregate(id) {
		return State{}, 0, illegalArgument(fmt.Sprintf("stream %s is of %s, not of an ExecutionFailed record", st.ID, st.Aggregate))
	}
	if snap, ok := s.stillLast(ctx, st); ok {
		return snap.State, st.Version, nil
	}
	return s.GetAtLeast(ctx, id, st.Version)
}

// stillLast returns the snapshot st carries, cached, if the store says st
// is still its record's last stream. ok is false when it cannot say so:
// the state is not usable, the store cannot check, or the record moved on,
// or the check failed (a replica, even the leader, may not have st yet).
func (s *Service) stillLast(ctx context.Context, st eventstore.Stream) (snapshot, bool) {
	lc, ok := s.store.(lastChecker)
	c, hit := s.cache.get(st.Aggregate.ID)
	if !ok || st.Seq == 0 || hit && c.version > st.Version {
		return snapshot{}, false
	}
	snap := c.snap // this Service appended or read st: no need to decode it
	if !hit || !c.is(st) {
		if snap, ok = carried(st); !ok || snap.State.Status == StatusPrepared && snap.State.PreparedVersion == 0 {
			return snapshot{}, false // load replays the history of such a state
		}
	}
	if _, changed, err := lc.LoadLastIfChanged(ctx, st.Aggregate, st.Seq); err != nil || changed {
		return snapshot{}, false
	}
	s.cache.put(st.Aggregate.ID, cachedRecord{seq: st.Seq, version: st.Version, snap: snap, at: s.clock.Now().UnixMilli()})
	return snap, true
}

// found is what Get and GetAtLeast return for a load's result.
func found(id string, snap snapshot, version uint64, err error) (State, uint64, error) {
	if err != nil {
		return State{}, 0, err
	}
	if version == 0 {
		return State{}, 0, &Error{Kind: ErrNotFound, Message: fmt.Sprintf("ExecutionFailed %s not found.", id)}
	}
	return snap.State, version, nil
}

// checkRecordID refuses an id that cannot be a record's with an *Error
// matching ErrIllegalArgument, whose message names the rule broken (and not
// the event store's sentinel).
func checkRecordID(id string) error {
	if err := eventstore.ValidateID("ExecutionFailed id", id); err != nil {
		return illegalArgument(strings.TrimSuffix(err.Error(), ": "+eventstore.ErrInvalid.Error()))
	}
	return nil
}

// leaderRetries is how many times GetAtLeast asks the stream leader for a
// version it knows was committed.
const leaderRetries = 5

// readsReplicas reports whether the store can read from the stream leader
// where its usual reads may come from a replica.
func (s *Service) readsReplicas() bool {
	_, ok := s.store.(leaderLoader)
	return ok
}

// load returns the record's snapshot and version; version 0 and a state
// with only the id if it does not exist. It reads only the last stream,
// unless that stream carries no state (not written by a Service), in which
// case it replays the history.
//
// An answer older than the record this Service holds in its cache (from a
// replica that lags, or a store that has no such guard) is never taken:
// the cached record is newer and committed. With fromLeader, the last
// stream is read from the stream leader and taken as it is.
func (s *Service) load(ctx context.Context, id string, fromLeader bool) (snapshot, uint64, error) {
	a := RecordAggregate(id)
	cached, hit := s.cache.get(id)
	last, err := s.loadLast(ctx, a, cached, hit, fromLeader)
	if errors.Is(err, errUnchanged) {
		s.refresh(id, cached)
		return cached.snap, cached.version, nil
	}
	if errors.Is(err, eventstore.ErrNotFound) {
		if hit && !fromLeader {
			return cached.snap, cached.version, nil // a replica behind what this Service saw
		}
		return snapshot{State: State{ID: id}}, 0, nil
	}
	if err != nil {
		return snapshot{}, 0, fmt.Errorf("load ExecutionFailed %s: %w", id, err)
	}
	if hit && !fromLeader && last.Version < cached.version {
		return cached.snap, cached.version, nil // a replica behind what this Service saw
	}
	if hit && cached.is(last) {
		s.refresh(id, cached)
		return cached.snap, cached.version, nil
	}
	// A PREPARED state carried without its prepared version was written
	// before the Service recorded it: replay the history to learn it.
	if snap, ok := carried(last); ok && (snap.State.Status != StatusPrepared || snap.State.PreparedVersion != 0) {
		s.cache.put(id, cachedRecord{seq: last.Seq, version: last.Version, snap: snap, at: s.clock.Now().UnixMilli()})
		return snap, last.Version, nil
	}
	streams, err := s.history(ctx, a, last)
	if err != nil {
		return snapshot{}, 0, fmt.Errorf("load ExecutionFailed %s history: %w", id, err)
	}
	snap, err := replay(id, streams)
	if err != nil {
		return snapshot{}, 0, err
	}
	return snap, last.Version, nil
}

// replay is record id's snapshot from its whole history: the state and
// the newest command ids.
func replay(id string, streams []eventstore.Stream) (snapshot, error) {
	snap := snapshot{State: State{ID: id}}
	for i := len(streams) - 1; i >= 0 && len(snap.CommandIDs) < recentCommands; i-- {
		if st := streams[i]; st.CommandID != "" {
			snap.CommandIDs = append(snap.CommandIDs, st.CommandID)
		}
	}
	for _, st := range streams {
		events := make([]Event, 0, len(st.Events))
		for _, e := range st.Events {
			ev, err := DecodeEvent(e.Name, e.Body)
			if err != nil {
				return snapshot{}, fmt.Errorf("ExecutionFailed %s version %d: %w", id, st.Version, err)
			}
			events = append(events, ev)
		}
		snap.State = EvolveAt(snap.State, st.Version, events...)
	}
	return snap, nil
}

// refresh notes that a read found record id still as the cache holds it.
func (s *Service) refresh(id string, c cachedRecord) {
	c.at = s.clock.Now().UnixMilli()
	s.cache.put(id, c)
}

// atLoader is what a Store may offer to read a history as of one stream,
// whatever was appended after it. *jsstore.Store does.
type atLoader interface {
	LoadAt(ctx context.Context, a eventstore.AggregateID, from, seq uint64) ([]eventstore.Stream, error)
}

// history returns the record's streams from version 1 to last, checked to
// be exactly those versions in order.
func (s *Service) history(ctx context.Context, a eventstore.AggregateID, last eventstore.Stream) ([]eventstore.Stream, error) {
	var streams []eventstore.Stream
	var err error
	if al, ok := s.store.(atLoader); ok && last.Seq != 0 {
		streams, err = al.LoadAt(ctx, a, 1, last.Seq)
	} else {
		streams, err = s.store.Load(ctx, a, 1)
	}
	if err != nil {
		return nil, err
	}
	// Load may include streams appended after last; they are not ours yet.
	for len(streams) > 0 && streams[len(streams)-1].Version > last.Version {
		streams = streams[:len(streams)-1]
	}
	for i := range streams {
		if streams[i].Version != uint64(i+1) {
			return nil, fmt.Errorf("the history has version %d at position %d; it must hold versions 1 to %d in order", streams[i].Version, i+1, last.Version)
		}
	}
	if uint64(len(streams)) != last.Version {
		return nil, fmt.Errorf("the history has %d versions; the last stream is version %d", len(streams), last.Version)
	}
	return streams, nil
}

// errUnchanged: the record's last stream is the one the cache holds.
var errUnchanged = errors.New("unchanged")

// loadLast reads the record's last stream, or returns errUnchanged without
// decoding it if the cache holds the record as of that stream. With
// fromLeader it reads from the stream leader if the store can.
func (s *Service) loadLast(ctx context.Context, a eventstore.AggregateID, c cachedRecord, hit, fromLeader bool) (eventstore.Stream, error) {
	if ll, ok := s.store.(leaderLoader); ok && fromLeader {
		return ll.LoadLastFromLeader(ctx, a)
	}
	lc, ok := s.store.(lastChecker)
	if !ok || !hit {
		return s.store.LoadLast(ctx, a)
	}
	st, changed, err := lc.LoadLastIfChanged(ctx, a, c.seq)
	if err == nil && !changed {
		return eventstore.Stream{}, errUnchanged
	}
	return st, err
}

// is reports whether last, the last stream read, is the cached one.
func (c cachedRecord) is(last eventstore.Stream) bool {
	return last.Version == c.version && last.Seq == c.seq && last.Seq != 0
}
