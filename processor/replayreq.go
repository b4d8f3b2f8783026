package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/eventstore"
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
	ReplayPending = "PENDING" // waiting for a processor of its function
	ReplayRunning = "RUNNING"
	ReplayDone    = "DONE"
)

// ReplayRequest is an operator's range replay: committed events of one
// context given again to one function only, as its processor reads them
// from the store, at most Rate per second. A replayed event that still
// fails becomes an ordinary ExecutionFailed record. It selects either the
// versions FromVersion..ToVersion of one aggregate (AggregateType and
// AggregateID set), or the stream sequences FromSeq..ToSeq of the
// context's stream, narrowed by AggregateType, EventNames and the commit
// time range FromTime..ToTime (epoch ms, 0 = open). Progress is kept in the
// request, so a processor restarted resumes it where it stopped.
type ReplayRequest struct {
	ID            string   `json:"id"`
	Context       string   `json:"context"`
	Processor     string   `json:"processor"`
	Function      string   `json:"function"`
	AggregateType string   `json:"aggregateType,omitempty"`
	AggregateID   string   `json:"aggregateId,omitempty"`
	FromVersion   uint64   `json:"fromVersion,omitempty"`
	ToVersion     uint64   `json:"toVersion,omitempty"`
	FromSeq       uint64   `json:"fromSeq,omitempty"`
	ToSeq         uint64   `json:"toSeq,omitempty"`
	EventNames    []string `json:"eventNames,omitempty"`
	FromTime      int64    `json:"fromTime,omitempty"`
	ToTime        int64    `json:"toTime,omitempty"`
	Rate          float64  `json:"rate,omitempty"`
	Actor         string   `json:"actor"`
	Reason        string   `json:"reason"`
	Created       int64    `json:"created"`

	Status string `json:"status"`
	// Next is the next version (aggregate range) or sequence to replay.
	Next uint64 `json:"next"`
	// Replayed and Failed count the events given to the function, and
	// those of them that failed and were recorded.
	Replayed uint64     `json:"replayed"`
	Failed   uint64     `json:"failed"`
	Updated  int64      `json:"updated,omitempty"`
	Claim    *HoldClaim `json:"claim,omitempty"`
}

// ByAggregate reports whether the request selects one aggregate's versions.
func (r *ReplayRequest) ByAggregate() bool { return r.AggregateID != "" }

// First and Last are the range's bounds (versions or sequences).
func (r *ReplayRequest) First() uint64 {
	if r.ByAggregate() {
		return r.FromVersion
	}
	return r.FromSeq
}

// Last is the range's last version or sequence.
func (r *ReplayRequest) Last() uint64 {
	if r.ByAggregate() {
		return r.ToVersion
	}
	return r.ToSeq
}

// Validate checks the request as an operator sent it: the id, context and
// function names, a range with From <= To within MaxReplaySpan, the event
// names, the time range, the rate, actor and reason. Its errors wrap
// ErrInvalidOption and name the field and the rule.
func (r *ReplayRequest) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalidOption)
	}
	for _, c := range []struct{ field, v string }{{"id", r.ID}, {"context", r.Context}, {"processor", r.Processor}, {"function", r.Function}} {
		if err := eventstore.ValidateName(c.field, c.v); err != nil {
			return bad("%s", reason(err))
		}
	}
	if r.AggregateType != "" {
		if err := eventstore.ValidateName("aggregateType", r.AggregateType); err != nil {
			return bad("%s", reason(err))
		}
	}
	if r.ByAggregate() {
		if r.AggregateType == "" {
			return bad("aggregateType must be set with aggregateId")
		}
		if err := eventstore.ValidateID("aggregateId", r.AggregateID); err != nil {
			return bad("%s", reason(err))
		}
		if r.FromSeq != 0 || r.ToSeq != 0 {
			return bad("fromSeq and toSeq select the stream; an aggregate range takes fromVersion and toVersion")
		}
	} else if r.FromVersion != 0 || r.ToVersion != 0 {
		return bad("fromVersion and toVersion need aggregateType and aggregateId")
	}
	first, last := r.First(), r.Last()
	unit := "sequence"
	if r.ByAggregate() {
		unit = "version"
	}
	switch {
	case first < 1:
		return bad("the first %s must be at least 1, got %d", unit, first)
	case last < first:
		return bad("the last %s (%d) must not be before the first (%d)", unit, last, first)
	case last-first >= MaxReplaySpan:
		return bad("the range spans %d %ss, over the limit of %d", last-first+1, unit, MaxReplaySpan)
	}
	if len(r.EventNames) > MaxReplayEventNames {
		return bad("eventNames has %d names, over the limit of %d", len(r.EventNames), MaxReplayEventNames)
	}
	for _, n := range r.EventNames {
		if err := eventstore.ValidateName("event name", n); err != nil {
			return bad("%s", reason(err))
		}
	}
	if r.FromTime < 0 || r.ToTime < 0 || (r.ToTime != 0 && r.ToTime < r.FromTime) {
		return bad("the time range %d..%d must be epoch milliseconds with from <= to", r.FromTime, r.ToTime)
	}
	if r.Rate < 0 || r.Rate > MaxReplayRate {
		return bad("rate must be between 0 (default %d) and %d events per second, got %g", DefaultReplayRate, MaxReplayRate, r.Rate)
	}
	if strings.TrimSpace(r.Actor) == "" || strings.TrimSpace(r.Reason) == "" {
		return bad("a range replay needs an actor and a reason: it is audited")
	}
	if len(r.Reason) > 1024 || len(r.Actor) > 256 {
		return bad("actor (at most 256 bytes) or reason (at most 1024 bytes) is too long")
	}
	return nil
}

// sameSelection reports whether o asks for what r asks for.
func (r *ReplayRequest) sameSelection(o *ReplayRequest) bool {
	return r.Context == o.Context && r.Processor == o.Processor && r.Function == o.Function &&
		r.AggregateType == o.AggregateType && r.AggregateID == o.AggregateID &&
		r.FromVersion == o.FromVersion && r.ToVersion == o.ToVersion && r.FromSeq == o.FromSeq && r.ToSeq == o.ToSeq &&
		slices.Equal(r.EventNames, o.EventNames) && r.FromTime == o.FromTime && r.ToTime == o.ToTime && r.Rate == o.Rate
}

// matches reports whether the stream's event e is selected (the range
// itself is checked by the caller).
func (r *ReplayRequest) matches(st *eventstore.Stream, e *eventstore.Event) bool {
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
	kv jetstream.KeyValue
}

// OpenReplays binds the range replay bucket, creating it (with replicas,
// 1 if 0) if needed.
func OpenReplays(ctx context.Context, js jetstream.JetStream, replicas int) (*Replays, error) {
	kv, err := replaysBucket(ctx, js, replicas)
	if err != nil {
		return nil, err
	}
	return &Replays{kv: kv}, nil
}

func replaysBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, ReplayBucket)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("open the replays bucket %s: %w", ReplayBucket, err)
	}
	kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: ReplayBucket, Description: "amends operators' range replays, one key per request id",
		History: 1, Replicas: max(replicas, 1), Storage: jetstream.FileStorage,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, ReplayBucket)
	}
	if err != nil {
		return nil, fmt.Errorf("create the replays bucket %s: %w", ReplayBucket, err)
	}
	return kv, nil
}

// Submit stores r as PENDING for its function's processor to run, and
// returns it with created=true. The request id makes it idempotent: the
// same id with the same selection returns the stored request (with its
// progress) and created=false; with another selection it fails with
// ErrReplayConflict. An invalid request fails with ErrInvalidOption.
func (rs *Replays) Submit(ctx context.Context, r ReplayRequest) (ReplayRequest, bool, error) {
	if r.Rate == 0 {
		r.Rate = DefaultReplayRate
	}
	if err := r.Validate(); err != nil {
		return ReplayRequest{}, false, err
	}
	r.Status, r.Next, r.Replayed, r.Failed, r.Claim, r.Updated = ReplayPending, r.First(), 0, 0, nil, r.Created
	b, err := json.Marshal(r)
	if err != nil {
		return ReplayRequest{}, false, err
	}
	if _, err = rs.kv.Create(ctx, r.ID, b); err == nil {
		return r, true, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return ReplayRequest{}, false, fmt.Errorf("store replay %s: %w", r.ID, err)
	}
	have, err := rs.Get(ctx, r.ID)
	if err != nil {
		return ReplayRequest{}, false, err
	}
	if !have.sameSelection(&r) {
		return have, false, fmt.Errorf("replay request id %s was used for another replay; use a new id: %w", r.ID, ErrReplayConflict)
	}
	return have, false, nil
}

// Get returns the request id, or an error matching ErrReplayNotFound.
func (rs *Replays) Get(ctx context.Context, id string) (ReplayRequest, error) {
	if err := eventstore.ValidateName("id", id); err != nil {
		return ReplayRequest{}, fmt.Errorf("%s: %w", reason(err), ErrReplayNotFound)
	}
	e, err := rs.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return ReplayRequest{}, fmt.Errorf("replay %s: %w", id, ErrReplayNotFound)
	}
	if err != nil {
		return ReplayRequest{}, fmt.Errorf("read replay %s: %w", id, err)
	}
	return decodeReplay(e.Value())
}

func decodeReplay(b []byte) (ReplayRequest, error) {
	var r ReplayRequest
	if err := json.Unmarshal(b, &r); err != nil {
		return ReplayRequest{}, fmt.Errorf("decode replay request: %w", err)
	}
	return r, nil
}

// updateReplay is updateHold's read-change-CAS loop for a request.
func updateReplay(ctx context.Context, kv jetstream.KeyValue, id string, change func(r *ReplayRequest) error) (ReplayRequest, error) {
	for attempt := 0; ; attempt++ {
		e, err := kv.Get(ctx, id)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return ReplayRequest{}, fmt.Errorf("replay %s: %w", id, ErrReplayNotFound)
		}
		if err != nil {
			return ReplayRequest{}, fmt.Errorf("read replay %s: %w", id, err)
		}
		r, err := decodeReplay(e.Value())
		if err != nil {
			return ReplayRequest{}, err
		}
		if err := change(&r); err != nil {
			return r, err
		}
		b, err := json.Marshal(r)
		if err != nil {
			return r, err
		}
		if _, err = kv.Update(ctx, id, b, e.Revision()); err == nil {
			return r, nil
		}
		if !isCASConflict(err) || attempt > 1000 {
			return r, fmt.Errorf("write replay %s: %w", id, err)
		}
	}
}
