package circuit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/rollout"
)

// DefaultDrainBucket is the KV bucket of the recovery drains' progress,
// one key per function (Function.String).
const DefaultDrainBucket = "amends_drains"

// Bounds of a stored drain, checked by DecodeDrain.
const (
	maxDrainValue = 256 << 10
	// MaxDrainRate bounds a drain's rate, records per second.
	MaxDrainRate = 100000
)

// ErrInvalidDrain reports a stored drain that does not validate; the
// message names the field.
var ErrInvalidDrain = errors.New("circuit: invalid stored drain")

// Drains keeps the progress of the recovery drains in a KV bucket through
// the engine's typed KV layer (kvstore: every read validated by
// DecodeDrain, an invalid entry quarantined), so that it survives a
// restart of the scheduler, or another instance taking its lease over.
// Safe for concurrent use.
type Drains struct {
	store *kvstore.Store[Drain]
	now   func() time.Time
}

// DrainsOption configures OpenDrains.
type DrainsOption func(*drainsOptions)

type drainsOptions struct{ kv []kvstore.Option }

// WithDrainsQuarantine records the stored drains that do not validate in
// r, the process's quarantine (default: a quarantine on js).
func WithDrainsQuarantine(r kvstore.Recorder) DrainsOption {
	return func(o *drainsOptions) { o.kv = append(o.kv, kvstore.WithRecorder(r)) }
}

func drainSpec(bucket string, replicas int) kvstore.Spec {
	return kvstore.Spec{Config: jetstream.KeyValueConfig{Bucket: bucket, Description: "amends: progress of the recovery drains after an outage", History: 5,
		Replicas: replicas, MaxValueSize: maxDrainValue}, MaxValue: maxDrainValue}
}

var drainCodec = kvstore.Codec[Drain]{Decode: func(e kvstore.Entry) (Drain, error) { return DecodeDrain(e.Key, e.Value, e.Now) }}

// OpenDrains returns the drains bucket (DefaultDrainBucket if bucket is
// ""), creating it with replicas (1 if 0) if it does not exist.
func OpenDrains(ctx context.Context, js jetstream.JetStream, bucket string, replicas int, opts ...DrainsOption) (*Drains, error) {
	if bucket == "" {
		bucket = DefaultDrainBucket
	}
	if replicas == 0 {
		replicas = 1
	}
	if !bounds.Within(replicas, 1, 5) {
		return nil, fmt.Errorf("drain bucket replicas must be between 1 and 5, got %d: %w", replicas, ErrInvalidOption)
	}
	var o drainsOptions
	for _, opt := range opts {
		opt(&o)
	}
	b, err := kvstore.Open(ctx, js, drainSpec(bucket, replicas), o.kv...)
	if err != nil {
		return nil, fmt.Errorf("drain bucket: %w", err)
	}
	return &Drains{store: kvstore.For(b, drainCodec), now: time.Now}, nil
}

// Get returns f's drain; ok is false if f never had one. A stored drain
// that does not validate is an error matching ErrInvalidDrain (and
// kvstore's ErrInvalid); it is quarantined.
func (d *Drains) Get(ctx context.Context, f Function) (dr Drain, ok bool, err error) {
	dr, rev, err := d.store.Get(ctx, f.String())
	switch {
	case errors.Is(err, kvstore.ErrNotFound):
		return Drain{}, false, nil
	case errors.Is(err, kvstore.ErrInvalid):
		return Drain{}, false, fmt.Errorf("drain of %s at revision %d: %w: %w", f, rev, err, ErrInvalidDrain)
	case err != nil:
		return Drain{}, false, fmt.Errorf("read the drain of %s: %w", f, err)
	}
	return dr, true, nil
}

// List returns every stored drain that validates, by function, and the
// errors of those that do not.
func (d *Drains) List(ctx context.Context) ([]Drain, []error, error) {
	return listByFunction(ctx, d.store, "drain", ErrInvalidDrain, func(dr Drain) Function { return dr.Function })
}

// Put stores dr, validated as DecodeDrain would read it; only the
// scheduler's lease holder writes drains.
func (d *Drains) Put(ctx context.Context, dr Drain) error {
	if err := dr.check(d.now()); err != nil {
		return fmt.Errorf("the drain of %s would not validate: %w", dr.Function, err)
	}
	_, err := d.store.Put(ctx, dr.Function.String(), dr)
	return err
}

// drainBounds are what a stored drain may hold beside the rules of every
// rollout: its own phase, waiting; a pace up to MaxDrainRate; a next step
// at most a cool-down (at most an hour) or a step's worth at the slowest
// rate after now.
var drainBounds = rollout.Bounds{Phases: []string{DrainWaiting}, MaxRate: MaxDrainRate,
	MaxWait: max(time.Hour, time.Duration(rollout.MaxBatch/rollout.MinRate)*time.Second)}

// DecodeDrain reads the drain stored under key, validating every field at
// now: the key is its function (CONTEXT.PROCESSOR.NAME); the window ends
// after it begins, and has ended while it drains; the probe is a record
// id with an attempt from 1; the times are not ahead of now by more than
// rollout.Skew; and its progress passes rollout.Progress.Check (phase,
// size, rate, batch, counts, a next step at most an hour away, note). The
// error matches ErrInvalidDrain and names the field. A drain that does
// not decode is started again from the circuit's incident, never acted
// on as stored.
func DecodeDrain(key string, value []byte, now time.Time) (Drain, error) {
	if len(value) > maxDrainValue {
		return Drain{}, badDrain("", "the value is %d bytes, over the limit of %d", len(value), maxDrainValue)
	}
	f, err := ParseFunction(key)
	if err != nil {
		return Drain{}, badDrain("key", "%v", err)
	}
	var dr Drain
	if err := json.Unmarshal(value, &dr); err != nil {
		return Drain{}, badDrain("", "not a drain in JSON: %v", err)
	}
	if dr.Function != f {
		return Drain{}, badDrain("function", "%s is not the key's function %s", dr.Function, f)
	}
	if err := dr.check(now); err != nil {
		return Drain{}, err
	}
	return dr, nil
}

func (dr *Drain) check(now time.Time) error {
	for _, t := range []struct {
		field string
		v     int64
	}{{"from", dr.From}, {"to", dr.To}, {"probeAt", dr.ProbeAt}} {
		if err := kvstore.Within(t.field, t.v, now, rollout.Skew); err != nil {
			return fmt.Errorf("%w: %w", err, ErrInvalidDrain)
		}
	}
	switch {
	case dr.To != 0 && dr.To < dr.From:
		return badDrain("to", "%d is before the window begins at %d", dr.To, dr.From)
	case dr.Running() && dr.To == 0:
		return badDrain("to", "a drain under way drains a window that ended")
	case dr.Probes < 0:
		return badDrain("probes", "must not be negative, got %d", dr.Probes)
	}
	if dr.Probe != nil {
		if err := rollout.CheckRecord("probe", *dr.Probe); err != nil {
			return fmt.Errorf("%w: %w", err, ErrInvalidDrain)
		}
	}
	if err := dr.Progress.Check(now, drainBounds); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalidDrain)
	}
	return nil
}

func badDrain(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", kvstore.Invalid(field, format, args...), ErrInvalidDrain)
}
