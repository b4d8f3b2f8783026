package kvstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/quarantine"
)

// Setting is one setting of a bucket that Open compares.
type Setting string

// The settings Open can compare.
const (
	SettingTTL       Setting = "ttl"
	SettingHistory   Setting = "history"
	SettingReplicas  Setting = "replicas"
	SettingStorage   Setting = "storage"
	SettingMarkerTTL Setting = "limit marker ttl"
)

// DefaultMaxValue bounds a value when the Spec sets none: JetStream's
// default largest message.
const DefaultMaxValue = 1 << 20

// Spec describes a bucket.
type Spec struct {
	// Config is the configuration Open creates the bucket with.
	Config jetstream.KeyValueConfig
	// Match lists the settings an existing bucket must share with Config:
	// the ones the bucket's users depend on (a lease's TTL, the views'
	// replicas). Others are left as an operator set them.
	Match []Setting
	// MaxValue bounds every value read or written, in bytes
	// (DefaultMaxValue if 0). A value read that is larger is invalid; one
	// to write, refused.
	MaxValue int
	// Disposable says the bucket's content may be lost: it is rebuilt
	// (views), transient (a lease, build heartbeats, probes) or a cache.
	// Repair may delete and create such a bucket again when its settings
	// cannot be changed in place.
	Disposable bool
}

func (s Spec) maxValue() int {
	if s.MaxValue > 0 {
		return s.MaxValue
	}
	return DefaultMaxValue
}

// Option configures a Bucket.
type Option func(*options)

type options struct {
	recorder Recorder
	logger   *slog.Logger
	now      func() time.Time
}

// WithRecorder makes the bucket report invalid entries to r (the
// process's quarantine, so that its counts and metrics include them); nil
// keeps the default: a quarantine.Quarantine on the bucket's JetStream with
// the default stream, provisioned on the first report.
func WithRecorder(r Recorder) Option {
	return func(o *options) {
		if r != nil {
			o.recorder = r
		}
	}
}

// WithLogger sets the logger of invalid entries reported without a
// Recorder, and of reports that failed (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithClock sets the clock decoders compare times with (default
// time.Now).
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

// Bucket is an opened bucket and its Spec. Safe for concurrent use.
type Bucket struct {
	kv   jetstream.KeyValue
	js   jetstream.JetStream
	spec Spec
	rep  *reporter
	now  func() time.Time
}

// Open creates the bucket of spec, or binds the existing one and checks
// the settings spec.Match lists. An existing bucket that differs is a
// *MismatchError (ErrMismatch) saying what differs and how to repair it;
// Open never changes an existing bucket (Repair does). Other errors are
// JetStream's, wrapped with the bucket's name.
func Open(ctx context.Context, js jetstream.JetStream, spec Spec, opts ...Option) (*Bucket, error) {
	name := spec.Config.Bucket
	kv, err := js.CreateKeyValue(ctx, spec.Config)
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, name)
		if err == nil {
			err = check(ctx, kv, spec)
		}
	}
	if err != nil {
		var me *MismatchError
		if errors.As(err, &me) {
			return nil, err
		}
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	return Bind(js, kv, spec, opts...), nil
}

// Bind wraps a bucket opened elsewhere (a bucket the caller owns, such as
// a snapshot bucket) without checking its settings. Bind does no I/O.
func Bind(js jetstream.JetStream, kv jetstream.KeyValue, spec Spec, opts ...Option) *Bucket {
	o := options{logger: slog.Default(), now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if spec.Config.Bucket == "" {
		spec.Config.Bucket = kv.Bucket()
	}
	if o.recorder == nil && js != nil {
		if q, err := quarantine.New(js, quarantine.WithLogger(o.logger, 0)); err == nil {
			o.recorder = q
		}
	}
	return &Bucket{kv: kv, js: js, spec: spec, now: o.now, rep: newReporter(kv.Bucket(), o.recorder, o.logger, o.now)}
}

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.kv.Bucket() }

// KV is the underlying bucket, for watches and for the few callers that
// write raw (tests). Values read through it are not validated: decode
// them with a Store's DecodeEntry.
func (b *Bucket) KV() jetstream.KeyValue { return b.kv }

// Spec returns the bucket's Spec.
func (b *Bucket) Spec() Spec { return b.spec }

// Invalid counts the invalid entries (distinct key and revision) this
// Bucket met since it was opened.
func (b *Bucket) Invalid() uint64 { return b.rep.count() }

// Report records an entry that decoded but that its user found invalid
// against what it knows (a progress ahead of its aggregate, a view of a
// record that does not exist), as the decoders' refusals are: once per
// key and revision. It returns the *InvalidError, to be returned or
// logged.
func (b *Bucket) Report(ctx context.Context, key string, rev uint64, field, reason string) *InvalidError {
	e := &InvalidError{Bucket: b.Name(), Key: key, Revision: rev, Field: field, Reason: clip(reason, maxReason)}
	b.rep.report(ctx, e)
	return e
}

// ReportErr is Report for a decoder's or check's error (a *FieldError
// names the field).
func (b *Bucket) ReportErr(ctx context.Context, key string, rev uint64, err error) *InvalidError {
	e := invalidAt(b.Name(), key, rev, err)
	b.rep.report(ctx, e)
	return e
}

// MismatchError is a bucket whose settings differ from its Spec's.
type MismatchError struct {
	Bucket string
	// Diffs lists each setting: "ttl 1m0s (wanted 30s)".
	Diffs []string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("bucket %s exists with %s; amends never reconfigures a bucket on its own: run `amends serve --repair-buckets` once (it changes the settings in place, or deletes and creates again a bucket whose content can be rebuilt), or start every instance with the settings the bucket has",
		e.Bucket, strings.Join(e.Diffs, ", "))
}

// Is matches ErrMismatch.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

func check(ctx context.Context, kv jetstream.KeyValue, spec Spec) error {
	if len(spec.Match) == 0 {
		return nil
	}
	have, err := config(ctx, kv)
	if err != nil || have == nil {
		return err
	}
	if diffs := differences(*have, spec); len(diffs) > 0 {
		return &MismatchError{Bucket: spec.Config.Bucket, Diffs: diffs}
	}
	return nil
}

func config(ctx context.Context, kv jetstream.KeyValue) (*jetstream.KeyValueConfig, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("bucket %s status: %w", kv.Bucket(), err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return nil, nil
	}
	c := bs.Config()
	return &c, nil
}

func differences(have jetstream.KeyValueConfig, spec Spec) []string {
	want := spec.Config
	var diffs []string
	diff := func(s Setting, h, w any) {
		if h != w {
			diffs = append(diffs, fmt.Sprintf("%s %v (wanted %v)", s, h, w))
		}
	}
	for _, s := range spec.Match {
		switch s {
		case SettingTTL:
			diff(s, have.TTL, want.TTL)
		case SettingHistory:
			diff(s, max(have.History, 1), max(want.History, 1))
		case SettingReplicas:
			diff(s, max(have.Replicas, 1), max(want.Replicas, 1))
		case SettingStorage:
			diff(s, have.Storage, want.Storage)
		case SettingMarkerTTL:
			diff(s, have.LimitMarkerTTL, want.LimitMarkerTTL)
		}
	}
	return diffs
}

// Repaired says what Repair did.
type Repaired struct {
	Bucket string
	// Action is "none", "updated" (settings changed in place) or
	// "recreated" (deleted and created again: its content is gone).
	Action string
	Diffs  []string
}

// Repair brings the bucket of spec to its settings: it creates a missing
// bucket, changes the settings in place where JetStream allows it, and
// deletes and creates again a Disposable bucket whose settings cannot be
// changed (storage). A bucket that is not disposable and cannot be
// changed is an error wrapping ErrMismatch. dryRun reports what it would
// do and changes nothing.
func Repair(ctx context.Context, js jetstream.JetStream, spec Spec, dryRun bool) (Repaired, error) {
	name := spec.Config.Bucket
	out := Repaired{Bucket: name, Action: "none"}
	kv, err := js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		out.Action = "created"
		if dryRun {
			return out, nil
		}
		_, err = js.CreateKeyValue(ctx, spec.Config)
		return out, err
	}
	if err != nil {
		return out, fmt.Errorf("bucket %s: %w", name, err)
	}
	have, err := config(ctx, kv)
	if err != nil || have == nil {
		return out, err
	}
	out.Diffs = differences(*have, spec)
	if len(out.Diffs) == 0 {
		return out, nil
	}
	inPlace := have.Storage == spec.Config.Storage
	switch {
	case inPlace:
		out.Action = "updated"
	case spec.Disposable:
		out.Action = "recreated"
	default:
		return out, &MismatchError{Bucket: name, Diffs: out.Diffs}
	}
	if dryRun {
		return out, nil
	}
	if inPlace {
		if _, err := js.UpdateKeyValue(ctx, matched(*have, spec)); err != nil {
			if !spec.Disposable {
				return out, fmt.Errorf("bucket %s: change %s in place: %w", name, strings.Join(out.Diffs, ", "), err)
			}
			out.Action = "recreated" // e.g. a history JetStream cannot lower
		} else {
			return out, nil
		}
	}
	return out, recreate(ctx, js, spec)
}

// matched is the bucket's configuration have with the settings spec
// matches changed to spec's: what the operator set stays.
func matched(c jetstream.KeyValueConfig, spec Spec) jetstream.KeyValueConfig {
	for _, s := range spec.Match {
		switch s {
		case SettingTTL:
			c.TTL = spec.Config.TTL
		case SettingHistory:
			c.History = spec.Config.History
		case SettingReplicas:
			c.Replicas = spec.Config.Replicas
		case SettingMarkerTTL:
			c.LimitMarkerTTL = spec.Config.LimitMarkerTTL
		}
	}
	return c
}

// recreate deletes spec's bucket and creates it again as spec says.
func recreate(ctx context.Context, js jetstream.JetStream, spec Spec) error {
	name := spec.Config.Bucket
	if err := js.DeleteKeyValue(ctx, name); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("bucket %s: delete to create it again: %w", name, err)
	}
	if _, err := js.CreateKeyValue(ctx, spec.Config); err != nil {
		return fmt.Errorf("bucket %s: create again: %w", name, err)
	}
	return nil
}

// PurgeRaw removes every value of key, also a key nats.go refuses to
// address (written raw by another program, e.g. "r-ü"): it publishes the
// purge marker itself on $KV.<bucket>.<key>, as `nats kv purge` does.
// The key must still be a valid subject. Only for repairs.
func (b *Bucket) PurgeRaw(ctx context.Context, key string) error {
	if key == "" || strings.ContainsAny(key, " \t\r\n*>") || strings.HasPrefix(key, ".") || strings.HasSuffix(key, ".") || strings.Contains(key, "..") {
		return fmt.Errorf("key %s is not a subject: %w", Quote(key), ErrInvalidKey)
	}
	m := nats.NewMsg("$KV." + b.Name() + "." + key)
	m.Header.Set("KV-Operation", "PURGE")
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if _, err := b.js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("purge key %s of bucket %s: %w", QuoteKey(key), b.Name(), err)
	}
	return nil
}
