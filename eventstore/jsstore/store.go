package jsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
)

// Store is the JetStream event store. It keeps one stream per bounded
// context, created on first use (or by Provision), and stores one message
// per eventstore.Stream on the aggregate's subject.
//
// A Store is safe for concurrent use. It holds no goroutines and needs no
// closing; the caller owns the NATS connection.
type Store struct {
	js   jetstream.JetStream
	nc   *nats.Conn
	opts options

	mu      sync.Mutex
	streams map[string]*streamHandle

	positions *positionCache
	skips     skipList // skip.go

	laggingReads atomic.Uint64
}

// LaggingReads returns how many reads of this Store found the replica that
// answered a direct get behind what the Store knew to be committed (an
// older last message, or none where one must be) and were asked again of
// the stream leader or resumed (see the package documentation). On a
// single server it stays 0. Safe for concurrent use.
func (s *Store) LaggingReads() uint64 { return s.laggingReads.Load() }

type streamHandle struct {
	once   sync.Once
	name   string
	stream jetstream.Stream
	err    error
}

// New returns a Store on js. Options that cannot be applied return an error
// wrapping ErrInvalidOption. New does no I/O.
func New(js jetstream.JetStream, opts ...Option) (*Store, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	return &Store{
		js:        js,
		nc:        js.Conn(),
		opts:      o,
		streams:   make(map[string]*streamHandle),
		positions: newPositionCache(o.cacheSize),
	}, nil
}

// The Store keeps the eventstore contract, its log delivered to
// subscribers as JetStream messages.
var _ eventstore.Store[jetstream.Msg] = (*Store)(nil)

// Replicas returns the replica count of the store's streams (WithReplicas).
func (s *Store) Replicas() int { return s.opts.replicas }

// StreamName returns the name of the JetStream stream that holds context's
// events: "<stream prefix><context>".
func (s *Store) StreamName(context string) string { return s.opts.streamPrefix + context }

// Subject returns the subject an aggregate's streams are stored on:
// "<subject prefix>.<context>.<type>.<encoded id>" (see EncodeID).
func (s *Store) Subject(a eventstore.AggregateID) (string, error) {
	if err := a.Validate(); err != nil {
		return "", err
	}
	return subject(s.opts.subjectPrefix, a)
}

// Provision makes sure the streams of the given contexts exist with the
// store's settings: it creates a missing stream, accepts an existing one
// whose settings match and returns an error wrapping eventstore.ErrIncompatible,
// listing each difference, for one that does not. It never changes an
// existing stream. Operations provision their context on first use, so
// calling Provision is optional; it lets a service fail at start instead.
func (s *Store) Provision(ctx context.Context, contexts ...string) error {
	for _, c := range contexts {
		if _, err := s.stream(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// StreamConfig returns the configuration Provision creates for context:
// DenyDelete always, DenyPurge unless the context is removable
// (WithRemovable), S2 compression if it is compressed (WithCompressed).
func (s *Store) StreamConfig(context string) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              s.StreamName(context),
		Description:       "amends event store of bounded context " + context,
		Subjects:          []string{s.opts.subjectPrefix + "." + context + ".>"},
		Retention:         jetstream.LimitsPolicy,
		MaxConsumers:      -1,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxAge:            0,
		MaxMsgsPerSubject: -1,
		MaxMsgSize:        s.opts.maxMsgSize,
		Discard:           jetstream.DiscardOld,
		Storage:           s.opts.storage,
		Replicas:          s.opts.replicas,
		Duplicates:        s.opts.duplicates,
		DenyDelete:        true,
		DenyPurge:         !slices.Contains(s.opts.removable, context),
		AllowDirect:       true,
		Compression:       s.compression(context),
	}
}

// stream returns the provisioned stream of a context, provisioning it once.
// A failed provisioning is retried by the next call.
func (s *Store) stream(ctx context.Context, context string) (*streamHandle, error) {
	s.mu.Lock()
	h, ok := s.streams[context]
	if !ok {
		h = &streamHandle{name: s.StreamName(context)}
		s.streams[context] = h
	}
	s.mu.Unlock()
	h.once.Do(func() {
		if err := eventstore.ValidateName("context", context); err != nil {
			h.err = err
			return
		}
		h.stream, h.err = s.ensure(ctx, s.StreamConfig(context))
	})
	if h.err != nil {
		err := h.err
		if !errors.Is(err, eventstore.ErrInvalid) && !errors.Is(err, eventstore.ErrIncompatible) {
			// Transient: let the next call try again.
			s.mu.Lock()
			if s.streams[context] == h {
				delete(s.streams, context)
			}
			s.mu.Unlock()
		}
		return nil, err
	}
	return h, nil
}

func (s *Store) ensure(ctx context.Context, want jetstream.StreamConfig) (jetstream.Stream, error) {
	st, err := s.js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		st, err = s.js.CreateStream(ctx, want)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another instance created it first; check what it created.
			st, err = s.js.Stream(ctx, want.Name)
		} else if err == nil {
			return st, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("provision stream %s: %w", want.Name, err)
	}
	if diffs := compareConfig(st.CachedInfo().Config, want); len(diffs) > 0 {
		return nil, fmt.Errorf("stream %s exists with %s; amends never reconfigures a stream: set the store options to match or migrate the stream: %w",
			want.Name, strings.Join(diffs, ", "), eventstore.ErrIncompatible)
	}
	return st, nil
}

// compareConfig lists the settings of have that break what the store needs.
func compareConfig(have, want jetstream.StreamConfig) []string {
	var d []string
	diff := func(field string, h, w any) {
		if h != w {
			d = append(d, fmt.Sprintf("%s %v (wanted %v)", field, h, w))
		}
	}
	diff("subjects", strings.Join(have.Subjects, ","), strings.Join(want.Subjects, ","))
	diff("retention", have.Retention, want.Retention)
	diff("storage", have.Storage, want.Storage)
	diff("replicas", have.Replicas, want.Replicas)
	diff("max message size", have.MaxMsgSize, want.MaxMsgSize)
	diff("duplicate window", have.Duplicates, want.Duplicates)
	diff("allow direct", have.AllowDirect, want.AllowDirect)
	// Limits that would delete history are never acceptable.
	if have.MaxAge != 0 {
		d = append(d, fmt.Sprintf("max age %s (wanted unlimited: history must not expire)", have.MaxAge))
	}
	if have.MaxMsgs > 0 || have.MaxBytes > 0 || have.MaxMsgsPerSubject > 0 {
		d = append(d, fmt.Sprintf("limits max msgs %d, max bytes %d, max msgs per subject %d (wanted unlimited: history must not be discarded)",
			have.MaxMsgs, have.MaxBytes, have.MaxMsgsPerSubject))
	}
	return d
}
