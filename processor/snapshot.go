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

// ReadSnapshot returns the snapshot of a stored in kv, or an error matching
// eventstore.ErrNotFound.
func ReadSnapshot(ctx context.Context, kv jetstream.KeyValue, a eventstore.AggregateID) (Snapshot, error) {
	k, err := SnapshotKey(a)
	if err != nil {
		return Snapshot{}, err
	}
	e, err := kv.Get(ctx, k)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Snapshot{}, fmt.Errorf("no snapshot of %s: %w", a, eventstore.ErrNotFound)
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("read snapshot of %s: %w", a, err)
	}
	var s Snapshot
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return Snapshot{}, fmt.Errorf("snapshot of %s is not valid: %v: %w", a, err, eventstore.ErrInvalid)
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
	return p.Register(fn, func(ctx context.Context, d *Delivery) error {
		if d.Index != len(d.Stream.Events)-1 {
			return nil // once per stream, after its last event
		}
		return saveSnapshot(ctx, kv, d)
	}, opts...)
}

func saveSnapshot(ctx context.Context, kv jetstream.KeyValue, d *Delivery) error {
	k, err := SnapshotKey(d.Stream.Aggregate)
	if err != nil {
		return err
	}
	state, err := json.Marshal(d.State)
	if err != nil {
		return fmt.Errorf("encode the state of %s: %w", d.Stream.Aggregate, err)
	}
	doc, err := json.Marshal(Snapshot{Version: d.Stream.Version, Seq: d.Stream.Seq, State: state})
	if err != nil {
		return err
	}
	for range 3 {
		e, err := kv.Get(ctx, k)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			_, err = kv.Create(ctx, k, doc)
		case err != nil:
			return fmt.Errorf("read snapshot %s: %w", k, err)
		default:
			var have Snapshot
			if json.Unmarshal(e.Value(), &have) == nil && have.Version >= d.Stream.Version {
				return nil
			}
			_, err = kv.Update(ctx, k, doc, e.Revision())
		}
		if err == nil {
			return nil
		}
		var apiErr *jetstream.APIError
		if !errors.Is(err, jetstream.ErrKeyExists) && !(errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
			return fmt.Errorf("write snapshot %s: %w", k, err)
		}
	}
	return fmt.Errorf("write snapshot %s: lost the race three times", k)
}
