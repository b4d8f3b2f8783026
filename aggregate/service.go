package aggregate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/uuid"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/wait"
)

// Where ExecutionFailed records live in the event store.
const (
	// Context is the bounded context of the compensation records.
	Context = "compensation"
	// AggregateType is the aggregate type of a record.
	AggregateType = "execution_failed"
)

// Stream headers the Service writes on every command.
const (
	HeaderCommand = "command"
	HeaderActor   = "actor"
	HeaderReason  = "reason"
)

// recentCommands is how many command ids a record remembers for
// idempotency: a command retried after this many newer commands on the same
// record runs again.
const recentCommands = 8

// Store is what the Service needs of an event store. *jsstore.Store
// satisfies it.
type Store interface {
	// LoadLast returns the aggregate's latest stream, or an error matching
	// eventstore.ErrNotFound.
	LoadLast(ctx context.Context, a eventstore.AggregateID) (eventstore.Stream, error)
	// Load returns the aggregate's streams from version from on.
	Load(ctx context.Context, a eventstore.AggregateID, from uint64) ([]eventstore.Stream, error)
	// Append stores a stream at expectedVersion+1 or fails with an error
	// matching eventstore.ErrConflict.
	Append(ctx context.Context, s eventstore.Stream, expectedVersion uint64) (eventstore.Stream, error)
}

// Clock tells the time. Tests inject a fixed one.
type Clock interface{ Now() time.Time }

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now calls f.
func (f ClockFunc) Now() time.Time { return f() }

// Meta is what a command carries besides its fields.
type Meta struct {
	// CommandID makes the command idempotent: executing the same id again
	// on the record returns the committed result. Empty means a new id.
	CommandID string
	// RequestID and TraceID link the command to its request and trace.
	RequestID, TraceID string
	// Actor is who sent the command (an operator's token name, "scheduler",
	// "recorder"); Reason is why. Both are stored with the stream.
	Actor, Reason string
	// Headers are stored with the stream as well.
	Headers map[string]string
}

// Result is a command's outcome.
type Result struct {
	// ID is the record id.
	ID string
	// State and Version are the record after the command.
	State   State
	Version uint64
	// Events are what the command appended; none if Duplicate.
	Events []Event
	// Stream is the stored stream; the zero Stream if Duplicate.
	Stream eventstore.Stream
	// Duplicate reports that the command id had already been applied: nothing
	// was appended, and State and Version are the record's current ones.
	Duplicate bool
}

// Service executes commands on ExecutionFailed records stored in an event
// store. It is safe for concurrent use; concurrent commands on one record
// are serialised by the store's optimistic concurrency.
type Service struct {
	store       Store
	clock       Clock
	decider     Decider
	maxAttempts int
	cache       recordCache
}

// ServiceOption configures a Service.
type ServiceOption func(*Service)

// WithClock sets the clock Decide reads (default: the system clock).
func WithClock(c Clock) ServiceOption { return func(s *Service) { s.clock = c } }

// WithDefaultRetrySpec sets the spec of creations that carry none
// (default DefaultRetrySpec). The spec is used as given, 0/0/0 included;
// validate it first with ValidateRetrySpec, or each such creation fails
// with its error.
func WithDefaultRetrySpec(spec RetrySpec) ServiceOption {
	return func(s *Service) { s.decider.DefaultRetrySpec = &spec }
}

// WithConflictRetries sets how many times a command is decided again after
// losing a race on its record (default 8).
func WithConflictRetries(n int) ServiceOption {
	return func(s *Service) { s.maxAttempts = max(n, 0) + 1 }
}

// NewService returns a Service on store.
func NewService(store Store, opts ...ServiceOption) *Service {
	s := &Service{store: store, clock: ClockFunc(time.Now), maxAttempts: 9}
	for _, o := range opts {
		o(s)
	}
	return s
}

// RecordAggregate returns the event-store identity of record id.
func RecordAggregate(id string) eventstore.AggregateID {
	return eventstore.AggregateID{Context: Context, Type: AggregateType, ID: id}
}

// snapshot is what each stream carries as its eventstore.Stream.State: the
// record after the stream and the ids of its recent commands, newest first.
type snapshot struct {
	State      State    `json:"state"`
	CommandIDs []string `json:"commandIds,omitempty"`
}

// carried decodes the snapshot a stream carries; ok is false if it carries
// none for its record. Decoded with json/v2, as the envelope
// (eventstore.Decode): this is on every command's path.
func carried(st eventstore.Stream) (snapshot, bool) {
	if len(st.State) == 0 {
		return snapshot{}, false
	}
	var snap snapshot
	if err := jsonv2.Unmarshal(st.State, &snap); err != nil || snap.State.ID != st.Aggregate.ID || !snap.State.Exists() {
		return snapshot{}, false
	}
	return snap, true
}

// CarriedState returns the record state a stream written by a Service
// carries: the state after that stream. ok is false if the stream carries
// no valid state for its record (then replay the history with Evolve).
func CarriedState(st eventstore.Stream) (State, bool) {
	snap, ok := carried(st)
	return snap.State, ok
}

// encode writes the snapshot without the derived fields of the state's API
// shape, and without a MarshalJSON method, which encoding/json would make
// it scan twice.
func (s snapshot) encode() ([]byte, error) {
	return encodeWire(struct {
		State      plainState `json:"state"`
		CommandIDs []string   `json:"commandIds,omitempty"`
	}{plainState(s.State), s.CommandIDs})
}

// Execute runs command c on record id: load, decide at the clock's time,
// append at the loaded version; on a conflict it loads and decides again,
// up to the configured number of times, with jittered backoff.
//
// Two kinds of command skip the first read. A record this Service
// appended or read less than 10 s ago (by its clock) is decided on as it
// was then, and the append expects that stream's version: if the record moved
// on meanwhile, the store refuses the append and the record is loaded
// and decided again at once. A rejection or a duplicate command id found
// that way is checked on a loaded record before it is returned. Any other
// CreateExecutionFailed is first appended as a new record; only if the
// record exists is it loaded and decided again.
//
// A rejected command returns the *Error from Decide (match it with
// errors.Is against ErrIllegalState, ErrNotFound, ...). Losing every race
// returns an error matching eventstore.ErrConflict. An invalid id returns
// an error matching ErrIllegalArgument. Store failures are returned
// wrapped; retrying with the same Meta.CommandID is then safe.
func (s *Service) Execute(ctx context.Context, id string, c Command, meta Meta) (Result, error) {
	if err := checkRecordID(id); err != nil {
		return Result{}, err
	}
	if meta.CommandID == "" {
		meta.CommandID = uuid.NewString()
	}
	r := &race{id: id, c: c, meta: meta}
	// guess: decide on the record as this Service saw it a moment ago,
	// without reading; the append's expected version catches a record that
	// moved.
	r.cached, r.guess = s.cache.get(id)
	r.guess = r.guess && s.clock.Now().UnixMilli()-r.cached.at < guessWindow.Milliseconds()
	// A creation usually targets a new record: append at version 0 without
	// reading first, and load only if the record turns out to exist.
	_, r.assumeNew = c.(CreateExecutionFailed)
	r.assumeNew = r.assumeNew && !r.guess
	for attempt := 0; attempt < s.maxAttempts; attempt++ {
		if attempt > 0 && r.lastErr != nil {
			if err := wait.Backoff(ctx, attempt); err != nil {
				return Result{}, err
			}
		}
		res, next, err := s.try(ctx, r)
		switch next {
		case finished:
			return res, err
		case againAtOnce:
			attempt-- // not a lost race
		}
	}
	return Result{}, fmt.Errorf("%s on ExecutionFailed %s lost %d races in a row; try again: %w", c.CommandName(), id, s.maxAttempts, r.lastErr)
}

// race is one Execute across its attempts: what the next attempt reads
// and why the last one did not commit.
type race struct {
	id   string
	c    Command
	meta Meta
	// guess: decide on cached, without reading. assumeNew: append at
	// version 0 without reading.
	guess, assumeNew bool
	cached           cachedRecord
	// fromLeader: the next load asks the stream leader, because a
	// decision made on what the last load returned would be a rejection
	// that a replica lagging behind may have caused. leaderRead: the
	// current rejection was already checked on the leader.
	fromLeader, leaderRead bool
	lastErr                error // the last lost race
}

// step is what Execute does after an attempt.
type step int

const (
	finished    step = iota // return the attempt's result or error
	again                   // a lost race: try again, as one more attempt
	againAtOnce             // not a lost race: try again at once
)

// try makes one attempt of r: read (or guess), decide, append.
func (s *Service) try(ctx context.Context, r *race) (Result, step, error) {
	snap, version, err := s.read(ctx, r)
	if err != nil {
		return Result{}, finished, err
	}
	if slices.Contains(snap.CommandIDs, r.meta.CommandID) {
		if r.guess {
			// Committed, but the record may have moved on since:
			// return it as it is now.
			r.guess = false
			return Result{}, againAtOnce, nil
		}
		return Result{ID: r.id, State: snap.State, Version: version, Duplicate: true}, finished, nil
	}
	events, err := s.decider.Decide(snap.State, r.c, s.clock.Now())
	if err != nil {
		return Result{}, s.rejected(r, err), err
	}
	r.fromLeader = false
	next := snapshot{State: EvolveAt(snap.State, version+1, events...)}
	next.CommandIDs = append([]string{r.meta.CommandID}, snap.CommandIDs[:min(len(snap.CommandIDs), recentCommands-1)]...)
	var streamID string
	if r.assumeNew {
		// Not derived from the command id: a retried creation must
		// conflict, be loaded and be recognised by its command id, not
		// be taken for the stream its first attempt committed.
		streamID = uuid.NewString()
	} else {
		streamID = uuid.NewSHA1(streamNamespace, []byte(r.meta.CommandID+"@"+strconv.FormatUint(version+1, 10))).String()
	}
	stream, err := s.stream(r.id, streamID, version+1, r.c, r.meta, events, next)
	if err != nil {
		return Result{}, finished, err
	}
	committed, err := s.store.Append(ctx, stream, version)
	if errors.Is(err, eventstore.ErrConflict) {
		return Result{}, r.conflicted(err), nil
	}
	if err != nil {
		return Result{}, finished, fmt.Errorf("%s on ExecutionFailed %s: %w", r.c.CommandName(), r.id, err)
	}
	return s.committed(r.id, stream, committed, next, events), finished, nil
}

// read returns the state an attempt decides on: the guess, a new record,
// or what the store (or its leader) holds.
func (s *Service) read(ctx context.Context, r *race) (snapshot, uint64, error) {
	switch {
	case r.guess:
		return r.cached.snap, r.cached.version, nil
	case r.assumeNew:
		return snapshot{State: State{ID: r.id}}, 0, nil
	}
	return s.load(ctx, r.id, r.fromLeader)
}

// rejected says what follows a rejection: final (finished), or checked
// again on a loaded state, or on the stream leader's.
func (s *Service) rejected(r *race, err error) step {
	if r.guess {
		// Maybe a rejection by an old state: decide on a loaded one.
		r.guess = false
		return againAtOnce
	}
	// A rejection is final only once the stream leader's state says so:
	// decide once more on what it holds.
	if !r.assumeNew && !r.leaderRead && s.readsReplicas() && !errors.Is(err, ErrIllegalArgument) {
		r.fromLeader, r.leaderRead, r.lastErr = true, true, nil
		return againAtOnce // at most once per state read
	}
	return finished
}

// conflicted says what follows an append that found the record moved.
func (r *race) conflicted(err error) step {
	switch {
	case r.guess:
		// The record moved on since this Service saw it: that is no lost
		// race, load it and decide again at once.
		r.guess = false
		return againAtOnce
	case r.assumeNew:
		r.assumeNew = false // it exists: read it and decide again, at once
		return again
	}
	r.lastErr, r.leaderRead = err, false // the record moved: a new rejection is checked again
	return again
}

// committed caches and returns what an append committed: next, or, when
// the store found the stream committed by an earlier attempt of the
// command (its acknowledgement was lost), decided at another time, that
// one, as a duplicate.
func (s *Service) committed(id string, stream, committed eventstore.Stream, next snapshot, events []Event) Result {
	if len(committed.State) > 0 && !bytes.Equal(committed.State, stream.State) {
		if done, ok := carried(committed); ok {
			s.cache.put(id, cachedRecord{seq: committed.Seq, version: committed.Version, snap: done, at: s.clock.Now().UnixMilli()})
			return Result{ID: id, State: done.State, Version: committed.Version, Duplicate: true}
		}
	}
	s.cache.put(id, cachedRecord{seq: committed.Seq, version: committed.Version, snap: next, at: s.clock.Now().UnixMilli()})
	return Result{ID: id, State: next.State, Version: committed.Version, Events: events, Stream: committed}
}

var streamNamespace = uuid.MustParse("5b0c8a53-6f3e-4d0e-9a57-3a0f7f2b9d41")

// stream builds the stream a command appends. Its id usually derives from
// the command id and version, so the same command at the same version is
// the same stream for the store's deduplication.
func (s *Service) stream(id, streamID string, version uint64, c Command, meta Meta, events []Event, next snapshot) (eventstore.Stream, error) {
	st := eventstore.Stream{
		ID:         streamID,
		Aggregate:  RecordAggregate(id),
		Version:    version,
		CommandID:  meta.CommandID,
		RequestID:  meta.RequestID,
		TraceID:    meta.TraceID,
		CreateTime: s.clock.Now().UnixMilli(),
		Headers:    map[string]string{HeaderCommand: c.CommandName()},
	}
	for k, v := range meta.Headers {
		st.Headers[k] = v
	}
	if meta.Actor != "" {
		st.Headers[HeaderActor] = meta.Actor
	}
	if meta.Reason != "" {
		st.Headers[HeaderReason] = meta.Reason
	}
	for i, e := range events {
		name, body, err := EncodeEvent(e)
		if err != nil {
			return eventstore.Stream{}, err
		}
		st.Events = append(st.Events, eventstore.Event{
			ID:       uuid.NewSHA1(streamNamespace, []byte(streamID+"#"+strconv.Itoa(i))).String(),
			Name:     name,
			Revision: eventstore.DefaultRevision,
			Body:     body,
		})
	}
	state, err := next.encode()
	if err != nil {
		return eventstore.Stream{}, err
	}
	st.State = state
	return st, nil
}
