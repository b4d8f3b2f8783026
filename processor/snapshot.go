package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/kvstore"
)

// SnapshotProcessor is the processor name of the built-in snapshot
// functions; each is named after its aggregate type.
const SnapshotProcessor = "snapshot"

// Snapshot is what the snapshot function stores for an aggregate.
type Snapshot struct {
	// Version and Seq are the aggregate version and stream sequence the
	// state is after.
	Version uint64 `json:"version"`
	Seq     uint64 `json:"seq"`
	// State is the JSON of the state the registered evolve built.
	State json.RawMessage `json:"state"`
}

// SnapshotKey returns the KV key of an aggregate's snapshot:
// "<context>.<type>.<id token>", the id token as in subjects with '~'
// written '=' (KV keys forbid '~').
func SnapshotKey(a eventstore.AggregateID) (string, error) {
	tok, err := jsstore.EncodeID(a.ID)
	if err != nil {
		return "", err
	}
	return a.Context + "." + a.Type + "." + strings.Replace(tok, "~", "=", 1), nil
}

// maxSnapshotValue bounds a stored snapshot read back: JetStream's
// default largest message.
const maxSnapshotValue = 1 << 20

// snapshotStore binds the caller's bucket to the snapshot decoder.
func snapshotStore(kv jetstream.KeyValue, opts ...kvstore.Option) *kvstore.Store[Snapshot] {
	return kvstore.For(kvstore.Bind(nil, kv, kvstore.Spec{MaxValue: maxSnapshotValue}, opts...), snapshotCodec)
}

var snapshotCodec = kvstore.Codec[Snapshot]{Decode: func(e kvstore.Entry) (Snapshot, error) { return DecodeSnapshot(e.Key, e.Value) }}

// DecodeSnapshot reads the snapshot stored under key, validating it: the
// key has SnapshotKey's three tokens; the version is from 1 and the
// sequence, when set, not below it (version v of an aggregate is at a
// sequence of at least v); the state is a JSON value. An error names the
// field.
func DecodeSnapshot(key string, value []byte) (Snapshot, error) {
	if n := strings.Count(key, "."); n != 2 {
		return Snapshot{}, kvstore.Invalid("key", "has %d dot-separated tokens; a snapshot's key is context.aggregateType.id", n+1)
	}
	var s Snapshot
	if err := json.Unmarshal(value, &s); err != nil {
		return Snapshot{}, kvstore.Invalid("", "not a snapshot in JSON: %v", err)
	}
	if s.Version < 1 {
		return Snapshot{}, kvstore.Invalid("version", "must be at least 1, got %d", s.Version)
	}
	if s.Seq != 0 && s.Seq < s.Version {
		return Snapshot{}, kvstore.Invalid("seq", "%d is below the version %d: version v of an aggregate is at a sequence of at least v", s.Seq, s.Version)
	}
	if len(s.State) == 0 || string(s.State) == "null" {
		return Snapshot{}, kvstore.Invalid("state", "is missing")
	}
	return s, nil
}

// ReadSnapshot returns the snapshot of a stored in kv, or an error matching
// eventstore.ErrNotFound. A stored value that does not validate
// (DecodeSnapshot) is an error matching eventstore.ErrInvalid (and
// kvstore's ErrInvalid) that names the bucket, key, revision and field;
// it is logged, at most once per interval.
func ReadSnapshot(ctx context.Context, kv jetstream.KeyValue, a eventstore.AggregateID) (Snapshot, error) {
	k, err := SnapshotKey(a)
	if err != nil {
		return Snapshot{}, err
	}
	s, _, err := snapshotStore(kv).Get(ctx, k)
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		return Snapshot{}, fmt.Errorf("no snapshot of %s: %w", a, eventstore.ErrNotFound)
	case errors.Is(err, kvstore.ErrInvalid):
		return Snapshot{}, fmt.Errorf("snapshot of %s is not valid: %w: %w", a, err, eventstore.ErrInvalid)
	case err != nil:
		return Snapshot{}, fmt.Errorf("read snapshot of %s: %w", a, err)
	}
	return s, nil
}

// Snapshot registers the built-in snapshot function of aggregateType: a
// STATE_EVENT function (processor SnapshotProcessor, named after the type)
// that keeps the latest state of each aggregate of that type in kv, built
// with the evolve registered for the type (RegisterAggregate). It never
// replaces a snapshot with an older version, so redeliveries and replays
// are harmless. Its failures are recorded as STATE_EVENT records on their
// first failure. Errors as for Register.
func (p *Processor) Snapshot(aggregateType string, kv jetstream.KeyValue, opts ...FunctionOption) error {
	if kv == nil {
		return fmt.Errorf("snapshot of %s: the key-value bucket is nil: %w", aggregateType, ErrInvalidFunction)
	}
	fn := Function{Processor: SnapshotProcessor, Name: aggregateType, Kind: aggregate.KindStateEvent, AggregateTypes: []string{aggregateType}}
	store := snapshotStore(kv, kvstore.WithRecorder(p.o.quarantine), kvstore.WithLogger(p.o.logger))
	return p.Register(fn, func(ctx context.Context, d *Delivery) error {
		if d.Index != len(d.Stream.Events)-1 {
			return nil // once per stream, after its last event
		}
		return saveSnapshot(ctx, store, d)
	}, opts...)
}

// saveSnapshot writes d's state as its aggregate's snapshot unless the
// stored one is as recent (the bucket's Change loop). A stored snapshot
// that does not validate is replaced.
func saveSnapshot(ctx context.Context, store *kvstore.Store[Snapshot], d *Delivery) error {
	k, err := SnapshotKey(d.Stream.Aggregate)
	if err != nil {
		return err
	}
	state, err := json.Marshal(d.State)
	if err != nil {
		return fmt.Errorf("encode the state of %s: %w", d.Stream.Aggregate, err)
	}
	snap := Snapshot{Version: d.Stream.Version, Seq: d.Stream.Seq, State: state}
	_, _, err = store.Change(ctx, k, func(cur kvstore.Current[Snapshot]) (Snapshot, kvstore.Action, error) {
		if cur.Exists() && cur.Value.Version >= snap.Version {
			return cur.Value, kvstore.Keep, nil
		}
		return snap, kvstore.Write, nil
	})
	if err != nil {
		return fmt.Errorf("write snapshot %s: %w", k, err)
	}
	return nil
}
