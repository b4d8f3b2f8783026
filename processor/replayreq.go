package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/quarantine"
)

// ReplayBucket is the KV bucket of operators' range replays, one key per
// request id.
const ReplayBucket = "amends_replays"

// Range replay limits.
const (
	// MaxReplayRate is the highest rate a range replay may ask for, in
	// events per second; DefaultReplayRate applies when it asks for none.
	MaxReplayRate     = 10000
	DefaultReplayRate = 100
	// MaxReplaySpan bounds a range: versions for an aggregate, stream
	// sequences otherwise.
	MaxReplaySpan = 10_000_000
	// MaxReplayEventNames bounds the event names a range replay selects.
	MaxReplayEventNames = 32
)

// The statuses of a range replay.
const (
	ReplayPending = api.ReplayPending
	ReplayRunning = api.ReplayRunning
	ReplayDone    = api.ReplayDone
)

// ValidateReplay checks the request as an operator sent it: the id, context and
// function names, a range with From <= To within MaxReplaySpan, the event
// names, the time range, the rate, actor and reason. Its errors wrap
// ErrInvalidOption and name the field and the rule.
func ValidateReplay(r *api.Replay) error {
	for _, check := range []func(*api.Replay) error{checkReplayNames, checkReplayRange, checkReplayPace} {
		if err := check(r); err != nil {
			return fmt.Errorf("%w: %w", err, ErrInvalidOption)
		}
	}
	return nil
}

// checkReplayNames checks the names a range replay gives: its id, the
// function, the aggregate type and the event names.
func checkReplayNames(r *api.Replay) error {
	names := []struct{ field, v string }{{"id", r.ID}, {"context", r.Context}, {"processor", r.Processor}, {"function", r.Function}}
	if r.AggregateType != "" {
		names = append(names, struct{ field, v string }{"aggregateType", r.AggregateType})
	}
	if len(r.EventNames) > MaxReplayEventNames {
		return fmt.Errorf("eventNames has %d names, over the limit of %d", len(r.EventNames), MaxReplayEventNames)
	}
	for _, n := range r.EventNames {
		names = append(names, struct{ field, v string }{"event name", n})
	}
	for _, c := range names {
		if err := eventstore.ValidateName(c.field, c.v); err != nil {
			return errors.New(reason(err))
		}
	}
	return nil
}

// checkReplayRange checks what a range replay selects: an aggregate's
// versions, or the stream's sequences, within MaxReplaySpan.
func checkReplayRange(r *api.Replay) error {
	unit := "sequence"
	if r.ByAggregate() {
		unit = "version"
		if r.AggregateType == "" {
			return errors.New("aggregateType must be set with aggregateId")
		}
		if err := eventstore.ValidateID("aggregateId", r.AggregateID); err != nil {
			return errors.New(reason(err))
		}
		if r.FromSeq != 0 || r.ToSeq != 0 {
			return errors.New("fromSeq and toSeq select the stream; an aggregate range takes fromVersion and toVersion")
		}
	} else if r.FromVersion != 0 || r.ToVersion != 0 {
		return errors.New("fromVersion and toVersion need aggregateType and aggregateId")
	}
	first, last := r.First(), r.Last()
	switch {
	case first < 1:
		return fmt.Errorf("the first %s must be at least 1, got %d", unit, first)
	case last < first:
		return fmt.Errorf("the last %s (%d) must not be before the first (%d)", unit, last, first)
	case last-first >= MaxReplaySpan:
		return fmt.Errorf("the range spans %d %ss, over the limit of %d", last-first+1, unit, MaxReplaySpan)
	}
	return nil
}

// checkReplayPace checks a range replay's time range, rate and audit
// fields.
func checkReplayPace(r *api.Replay) error {
	switch {
	case r.FromTime < 0 || r.ToTime < 0 || (r.ToTime != 0 && r.ToTime < r.FromTime):
		return fmt.Errorf("the time range %d..%d must be epoch milliseconds with from <= to", r.FromTime, r.ToTime)
	case !bounds.Within(r.Rate, 0, MaxReplayRate):
		return fmt.Errorf("rate must be between 0 (default %d) and %d events per second, got %g", DefaultReplayRate, MaxReplayRate, r.Rate)
	case strings.TrimSpace(r.Actor) == "" || strings.TrimSpace(r.Reason) == "":
		return errors.New("a range replay needs an actor and a reason: it is audited")
	case len(r.Reason) > 1024 || len(r.Actor) > 256:
		return errors.New("actor (at most 256 bytes) or reason (at most 1024 bytes) is too long")
	}
	return nil
}

// sameReplay reports whether o asks for what r asks for.
func sameReplay(r, o *api.Replay) bool {
	return r.Context == o.Context && r.Processor == o.Processor && r.Function == o.Function &&
		r.AggregateType == o.AggregateType && r.AggregateID == o.AggregateID &&
		r.FromVersion == o.FromVersion && r.ToVersion == o.ToVersion && r.FromSeq == o.FromSeq && r.ToSeq == o.ToSeq &&
		slices.Equal(r.EventNames, o.EventNames) && r.FromTime == o.FromTime && r.ToTime == o.ToTime && r.Rate == o.Rate
}

// matches reports whether the stream's event e is selected (the range
// itself is checked by the caller).
func replayMatches(r *api.Replay, st *eventstore.Stream, e *eventstore.Event) bool {
	if r.AggregateType != "" && st.Aggregate.Type != r.AggregateType {
		return false
	}
	if len(r.EventNames) > 0 && !slices.Contains(r.EventNames, e.Name) {
		return false
	}
	if r.FromTime != 0 && st.CreateTime < r.FromTime {
		return false
	}
	return r.ToTime == 0 || st.CreateTime <= r.ToTime
}

// ErrReplayConflict reports a range replay request id used before for
// another selection.
var ErrReplayConflict = errors.New("processor: replay request id used for another replay")

// ErrReplayNotFound reports an unknown range replay request id.
var ErrReplayNotFound = errors.New("processor: replay request not found")

// Replays is the operators' view of range replays: submit, read, list.
// Safe for concurrent use.
type Replays struct {
	kv *replays
}

// replays is the range replay bucket, typed.
type replays = kvstore.Store[api.Replay]

// ReplaysOption configures OpenReplays.
type ReplaysOption func(*[]kvstore.Option)

// WithReplaysQuarantine records the stored range replays that do not
// validate (DecodeReplay) in q, the process's quarantine (default: a
// quarantine on js). They are never run.
func WithReplaysQuarantine(q *quarantine.Quarantine) ReplaysOption {
	return func(o *[]kvstore.Option) {
		if q != nil {
			*o = append(*o, kvstore.WithRecorder(q))
		}
	}
}

// OpenReplays binds the range replay bucket, creating it (with replicas,
// 1 if 0) if needed.
func OpenReplays(ctx context.Context, js jetstream.JetStream, replicas int, opts ...ReplaysOption) (*Replays, error) {
	var kopts []kvstore.Option
	for _, opt := range opts {
		opt(&kopts)
	}
	kv, err := replaysBucket(ctx, js, replicas, kopts...)
	if err != nil {
		return nil, err
	}
	return &Replays{kv: kv}, nil
}

// maxReplayValue bounds a stored range replay.
const maxReplayValue = 64 << 10

var replayCodec = kvstore.Codec[api.Replay]{Decode: func(e kvstore.Entry) (api.Replay, error) { return DecodeReplay(e.Key, e.Value, e.Now) }}

// DecodeReplay reads the range replay stored under key, validating every
// field at now: what ValidateReplay checks of a request, the key is its
// id, the status is one of the statuses, Next lies in the range (or just
// past it), the counts do not exceed the events of the range, the times
// are before now. A claim that ends more than a day after now is dropped
// as absent (and reported): an instance claims for AckWait. An error
// names the field; such a request is never run.
func DecodeReplay(key string, value []byte, now time.Time) (api.Replay, error) {
	var r api.Replay
	if err := json.Unmarshal(value, &r); err != nil {
		return api.Replay{}, kvstore.Invalid("", "not a range replay in JSON: %v", err)
	}
	if r.ID != key {
		return api.Replay{}, kvstore.Invalid("id", "%s is not the key %s", kvstore.Quote(r.ID), kvstore.QuoteKey(key))
	}
	if err := ValidateReplay(&r); err != nil {
		return api.Replay{}, kvstore.Invalid("", "%s", strings.TrimSuffix(err.Error(), ": "+ErrInvalidOption.Error()))
	}
	if err := kvstore.OneOf("status", r.Status, ReplayPending, ReplayRunning, ReplayDone); err != nil {
		return api.Replay{}, err
	}
	if !bounds.Within(r.Next, r.First(), r.Last()+1) {
		return api.Replay{}, kvstore.Invalid("next", "%d is outside the range %d..%d", r.Next, r.First(), r.Last())
	}
	if span := r.Last() - r.First() + 1; r.Failed > r.Replayed || r.Replayed > span*maxEventIndex {
		return api.Replay{}, kvstore.Invalid("replayed", "replayed %d and failed %d do not fit the range of %d", r.Replayed, r.Failed, span)
	}
	if err := kvstore.Past("created", r.Created, now, true); err != nil {
		return api.Replay{}, err
	}
	if err := kvstore.Past("updated", r.Updated, now, true); err != nil {
		return api.Replay{}, err
	}
	ignored, err := checkClaim(&r.Claim, now)
	if err != nil {
		return api.Replay{}, err
	}
	return r, ignored
}

func replaySpec(replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{
		Bucket: ReplayBucket, Description: "amends operators' range replays, one key per request id",
		History: 1, Replicas: max(replicas, 1), Storage: jetstream.FileStorage,
	}, MaxValue: maxReplayValue}
}

func replaysBucket(ctx context.Context, js jetstream.JetStream, replicas int, opts ...kvstore.Option) (*replays, error) {
	b, err := kvstore.Open(ctx, js, replaySpec(replicas), opts...)
	if err != nil {
		return nil, fmt.Errorf("the replays bucket: %w", err)
	}
	return kvstore.For(b, replayCodec), nil
}

// Submit stores r as PENDING for its function's processor to run, and
// returns it with created=true. The request id makes it idempotent: the
// same id with the same selection returns the stored request (with its
// progress) and created=false; with another selection it fails with
// ErrReplayConflict. An invalid request fails with ErrInvalidOption.
func (rs *Replays) Submit(ctx context.Context, r api.Replay) (api.Replay, bool, error) {
	if r.Rate == 0 {
		r.Rate = DefaultReplayRate
	}
	if err := ValidateReplay(&r); err != nil {
		return api.Replay{}, false, err
	}
	r.Status, r.Next, r.Replayed, r.Failed, r.Claim, r.Updated = ReplayPending, r.First(), 0, 0, nil, r.Created
	_, err := rs.kv.Create(ctx, r.ID, r)
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, kvstore.ErrConflict) {
		return api.Replay{}, false, fmt.Errorf("store replay %s: %w", r.ID, err)
	}
	have, err := rs.Get(ctx, r.ID)
	if err != nil {
		return api.Replay{}, false, err
	}
	if !sameReplay(&have, &r) {
		return have, false, fmt.Errorf("replay request id %s was used for another replay; use a new id: %w", r.ID, ErrReplayConflict)
	}
	return have, false, nil
}

// Get returns the request id, or an error matching ErrReplayNotFound.
func (rs *Replays) Get(ctx context.Context, id string) (api.Replay, error) {
	if err := eventstore.ValidateName("id", id); err != nil {
		return api.Replay{}, fmt.Errorf("%s: %w", reason(err), ErrReplayNotFound)
	}
	r, _, err := rs.kv.Get(ctx, id)
	if errors.Is(err, kvstore.ErrNotFound) {
		return api.Replay{}, fmt.Errorf("replay %s: %w", id, ErrReplayNotFound)
	}
	if err != nil {
		return api.Replay{}, fmt.Errorf("read replay %s: %w", id, err)
	}
	return r, nil
}

// updateReplay is the bucket's read-change-CAS loop for a request.
func updateReplay(ctx context.Context, kv *replays, id string, change func(r *api.Replay) error) (api.Replay, error) {
	r, _, err := kv.Change(ctx, id, func(cur kvstore.Current[api.Replay]) (api.Replay, kvstore.Action, error) {
		switch {
		case cur.Invalid != nil:
			return api.Replay{}, kvstore.Keep, fmt.Errorf("replay %s is stored invalid and is not run: %w", id, cur.Invalid)
		case !cur.Exists():
			return api.Replay{}, kvstore.Keep, fmt.Errorf("replay %s: %w", id, ErrReplayNotFound)
		}
		r := cur.Value
		if err := change(&r); err != nil {
			return r, kvstore.Keep, err
		}
		return r, kvstore.Write, nil
	})
	return r, err
}
