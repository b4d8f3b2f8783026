package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/kvstore"
)

// SkipBucket is the KV bucket of the operators' skip list: messages of
// the event store's streams that loaders pass over (see Skip).
const SkipBucket = "amends_skips"

// Skip is one message an operator approved to be passed over: a message
// on an aggregate's subject that is not a stream amends wrote (it does not
// decode, or its headers do not), which otherwise bricks the aggregate:
// every load of it fails. Once skipped, loaders read the aggregate as if
// the message were not there, appends continue after it, and nothing is
// deleted (the streams deny it).
type Skip struct {
	Stream  string `json:"stream"`
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	// Prev is the sequence of the last message on Subject before Seq that
	// loaders read (0: none, the aggregate had no stream before it).
	Prev uint64 `json:"prev"`
	// Actor, Reason and At (epoch ms) audit the approval.
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
	At     int64  `json:"at"`
}

func skipKey(stream string, seq uint64) string {
	return kvstore.Segment(stream) + "." + strconv.FormatUint(seq, 10)
}

func skipSpec(replicas int, storage jetstream.StorageType) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: SkipBucket, Description: "amends: messages of the event store operators approved to be passed over",
		History: 1, Replicas: replicas, Storage: storage}, MaxValue: 8 << 10}
}

var skipCodec = kvstore.Codec[Skip]{Decode: func(e kvstore.Entry) (Skip, error) { return DecodeSkip(e.Key, e.Value, e.Now) }}

// DecodeSkip reads a skip stored under key, validating it at now: the key
// is its stream and sequence; the subject and the approval's actor and
// reason are bounded texts; the previous sequence is before the skipped
// one; the time is before now.
func DecodeSkip(key string, value []byte, now time.Time) (Skip, error) {
	var sk Skip
	if err := json.Unmarshal(value, &sk); err != nil {
		return Skip{}, kvstore.Invalid("", "not a skip in JSON: %v", err)
	}
	if sk.Seq == 0 || key != skipKey(sk.Stream, sk.Seq) {
		return Skip{}, kvstore.Invalid("key", "is not the skip's stream %s and sequence %d", kvstore.Quote(sk.Stream), sk.Seq)
	}
	if err := kvstore.Name("stream", sk.Stream, 256); err != nil {
		return Skip{}, err
	}
	if err := kvstore.Text("subject", sk.Subject, 1024, true); err != nil {
		return Skip{}, err
	}
	if sk.Prev >= sk.Seq {
		return Skip{}, kvstore.Invalid("prev", "%d is not before the skipped sequence %d", sk.Prev, sk.Seq)
	}
	if err := kvstore.Line("actor", sk.Actor, 256, true); err != nil {
		return Skip{}, err
	}
	if err := kvstore.Line("reason", sk.Reason, 1024, true); err != nil {
		return Skip{}, err
	}
	return sk, kvstore.Past("at", sk.At, now, false)
}

// skipList is the Store's view of the skip bucket: bound on first need,
// read only on the path of a message that does not read (so the skips
// cost nothing to the aggregates they do not concern), and the skips met
// kept in memory.
type skipList struct {
	mu    sync.Mutex
	store *kvstore.Store[Skip] // nil until bound
	known atomic.Pointer[map[string]Skip]
}

// bucket binds the skip bucket; nil (and no error) if none exists yet.
func (s *Store) skipBucket(ctx context.Context, create bool) (*kvstore.Store[Skip], error) {
	l := &s.skips
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.store != nil {
		return l.store, nil
	}
	spec := skipSpec(s.opts.replicas, s.opts.storage)
	if !create {
		kv, err := s.js.KeyValue(ctx, SkipBucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("skip list: %w", err)
		}
		l.store = kvstore.For(kvstore.Bind(s.js, kv, spec), skipCodec)
		return l.store, nil
	}
	b, err := kvstore.Open(ctx, s.js, spec)
	if err != nil {
		return nil, fmt.Errorf("skip list: %w", err)
	}
	l.store = kvstore.For(b, skipCodec)
	return l.store, nil
}

func (l *skipList) remember(sk Skip) {
	for {
		old := l.known.Load()
		next := map[string]Skip{}
		if old != nil {
			next = maps.Clone(*old)
		}
		next[skipKey(sk.Stream, sk.Seq)] = sk
		if l.known.CompareAndSwap(old, &next) {
			return
		}
	}
}

// knownSkip returns the skip of seq of stream if this Store met it before:
// no I/O.
func (s *Store) knownSkip(stream string, seq uint64) (Skip, bool) {
	m := s.skips.known.Load()
	if m == nil {
		return Skip{}, false
	}
	sk, ok := (*m)[skipKey(stream, seq)]
	return sk, ok
}

// skipped returns the skip of message seq of h, if an operator approved
// one.
func (s *Store) skipped(ctx context.Context, h *streamHandle, seq uint64) (Skip, bool, error) {
	if sk, ok := s.knownSkip(h.name, seq); ok {
		return sk, true, nil
	}
	b, err := s.skipBucket(ctx, false)
	if err != nil || b == nil {
		return Skip{}, false, err
	}
	sk, _, err := b.Get(ctx, skipKey(h.name, seq))
	if errors.Is(err, kvstore.ErrNotFound) || errors.Is(err, kvstore.ErrInvalid) {
		return Skip{}, false, nil // an invalid skip approves nothing
	}
	if err != nil {
		return Skip{}, false, err
	}
	s.skips.remember(sk)
	return sk, true, nil
}

// passOver returns, for message m on subj that does not read (cause), the
// aggregate's last message that does if an operator skipped m: the one
// before it (Skip.Prev), with its position and expect set to m's sequence
// (appends continue after m). With no stream before m, it returns a nil
// message and a position of expect m's sequence. Without a skip it
// returns cause.
func (s *Store) passOver(ctx context.Context, h *streamHandle, subj string, m *rawMsg, cause error) (*rawMsg, position, error) {
	sk, ok, err := s.skipped(ctx, h, m.seq)
	if err != nil {
		return nil, position{}, errors.Join(cause, err)
	}
	if !ok || sk.Subject != subj {
		return nil, position{}, cause
	}
	if sk.Prev == 0 {
		return nil, position{expect: m.seq}, nil
	}
	pm, err := s.msgAt(ctx, h, sk.Prev)
	if err != nil {
		return nil, position{}, fmt.Errorf("%s: the message before skipped message %d: %w", subj, m.seq, err)
	}
	if pm.subject != subj {
		return nil, position{}, fmt.Errorf("%s: the skip of message %d names message %d as the one before it, which is on %s: %w", subj, m.seq, sk.Prev, pm.subject, eventstore.ErrCorrupt)
	}
	p, err := pm.pos()
	if err != nil {
		return nil, position{}, err
	}
	p.expect = m.seq
	return pm, p, nil
}

// ErrNotCorrupt reports a message a skip was asked for that is a stream
// amends wrote: loaders read it, so there is nothing to pass over.
var ErrNotCorrupt = errors.New("jsstore: the message is not corrupt")

// SkipPlan is what skipping a message does, as a dry run shows it.
type SkipPlan struct {
	Skip
	// Problem says why loaders cannot read the message.
	Problem string `json:"problem"`
	// Size is the message's size in bytes.
	Size int `json:"size"`
	// Version is the aggregate's version once the message is skipped (0:
	// no stream before it).
	Version uint64 `json:"version"`
	// Skipped is true once the skip is stored (false for a dry run).
	Skipped bool `json:"skipped"`
}

// PlanSkip reads message seq of stream and says what skipping it would
// do: its subject, why it does not read, the message loaders would read
// in its place and the aggregate's version then. It refuses (ErrNotCorrupt)
// a message that reads as a stream of its subject, and a message on a
// subject that is not an aggregate's (eventstore.ErrInvalid). Errors:
// eventstore.ErrNotFound for no message there, JetStream's.
func (s *Store) PlanSkip(ctx context.Context, stream string, seq uint64) (SkipPlan, error) {
	if !strings.HasPrefix(stream, s.opts.streamPrefix) || seq == 0 {
		return SkipPlan{}, fmt.Errorf("stream %s is not one of the event store's (they are named %s<context>), or sequence %d is 0: %w", kvstore.Quote(stream), s.opts.streamPrefix, seq, eventstore.ErrInvalid)
	}
	h, err := s.stream(ctx, strings.TrimPrefix(stream, s.opts.streamPrefix))
	if err != nil {
		return SkipPlan{}, err
	}
	m, err := s.msgAt(ctx, h, seq)
	if err != nil {
		return SkipPlan{}, fmt.Errorf("stream %s sequence %d: %w", stream, seq, err)
	}
	if !strings.HasPrefix(m.subject, s.opts.subjectPrefix+".") || strings.Count(m.subject, ".") < strings.Count(s.opts.subjectPrefix, ".")+3 {
		return SkipPlan{}, fmt.Errorf("message %d is on %s, not an aggregate's subject: %w", seq, m.subject, eventstore.ErrInvalid)
	}
	plan := SkipPlan{Skip: Skip{Stream: stream, Seq: seq, Subject: m.subject}, Size: len(m.data)}
	if _, err := s.decode(m); err == nil {
		return plan, fmt.Errorf("message %d on %s reads as a stream of its aggregate; only a message that does not can be skipped: %w", seq, m.subject, ErrNotCorrupt)
	} else {
		plan.Problem = err.Error()
	}
	// The last message before seq on the subject that reads, and is not
	// itself skipped: one walk of the subject's messages (a repair, once).
	var prev *rawMsg
	err = s.batchFrom(ctx, h, m.subject, 1, func(x *rawMsg) (bool, error) {
		if x.seq >= seq {
			return false, nil
		}
		if _, err := x.pos(); err == nil {
			if _, skipped, _ := s.skipped(ctx, h, x.seq); !skipped {
				prev = x
			}
		}
		return true, nil
	})
	if err != nil {
		return plan, err
	}
	if prev != nil {
		p, _ := prev.pos()
		plan.Prev, plan.Version = prev.seq, p.version
	}
	return plan, nil
}

// Skip stores the skip plan shows (PlanSkip; the plan is read again), by
// actor for reason (both required), so that every loader of the
// aggregate passes the message over from then on. Skipping a message
// skipped before returns the stored skip. Errors as PlanSkip's, and
// eventstore.ErrInvalid for no actor or reason.
func (s *Store) Skip(ctx context.Context, stream string, seq uint64, actor, reason string, now time.Time) (SkipPlan, error) {
	if strings.TrimSpace(actor) == "" || strings.TrimSpace(reason) == "" {
		return SkipPlan{}, fmt.Errorf("a skip needs an actor and a reason: it is audited: %w", eventstore.ErrInvalid)
	}
	plan, err := s.PlanSkip(ctx, stream, seq)
	if err != nil {
		return plan, err
	}
	plan.Actor, plan.Reason, plan.At = actor, reason, now.UnixMilli()
	b, err := s.skipBucket(ctx, true)
	if err != nil {
		return plan, err
	}
	if _, err := b.Create(ctx, skipKey(stream, seq), plan.Skip); err != nil {
		if !errors.Is(err, kvstore.ErrConflict) {
			return plan, err
		}
		have, _, gerr := b.Get(ctx, skipKey(stream, seq))
		if gerr != nil {
			return plan, gerr
		}
		plan.Skip = have
	}
	s.skips.remember(plan.Skip)
	s.positions.forget(plan.Subject)
	plan.Skipped = true
	return plan, nil
}
