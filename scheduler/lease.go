package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/kvstore"
)

// lease is one instance's claim on a key of a Leases bucket. The server
// expires the key TTL after its last write, so the holder counts its own
// validity from when it SENT the write that created or renewed the lease:
// the server wrote it later, so it expires later. The holder treats the
// lease as lost margin before that. Not safe for concurrent use; the
// leader loop owns it.
type lease struct {
	kv     *kvstore.Store[leaseValue]
	key    string
	holder string
	ttl    time.Duration
	margin time.Duration
	clock  aggregate.Clock

	rev        uint64    // revision of our last write; 0 when not held
	validUntil time.Time // when we stop acting as the holder
}

// leaseValue is what the key holds, for operators.
type leaseValue struct {
	Holder    string `json:"holder"`
	RenewedAt int64  `json:"renewedAt"`
}

func (l *lease) value(at time.Time) leaseValue {
	return leaseValue{Holder: l.holder, RenewedAt: at.UnixMilli()}
}

// leaseCodec is the lease bucket's decoder: a holder's name and when it
// renewed. Nothing acts on the value (the key's existence is the lease);
// operators read it.
var leaseCodec = kvstore.Codec[leaseValue]{Decode: func(e kvstore.Entry) (leaseValue, error) {
	var v leaseValue
	if err := json.Unmarshal(e.Value, &v); err != nil {
		return v, kvstore.Invalid("", "not a lease in JSON: %v", err)
	}
	if err := kvstore.Name("holder", v.Holder, 256); err != nil {
		return v, err
	}
	return v, kvstore.Past("renewedAt", v.RenewedAt, e.Now, false)
}}

// held reports whether the lease is ours and not past its validity at now.
func (l *lease) held(now time.Time) bool { return l.rev != 0 && now.Before(l.validUntil) }

// acquire creates the key. It returns false with a nil error if another
// instance holds it.
func (l *lease) acquire(ctx context.Context) (bool, error) {
	sent := l.clock.Now()
	rev, err := l.kv.Create(ctx, l.key, l.value(sent))
	if errors.Is(err, kvstore.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("acquire lease %s: %w", l.key, err)
	}
	l.rev, l.validUntil = rev, sent.Add(l.ttl-l.margin)
	return true, nil
}

// errLost: the key is gone or was written by someone else.
var errLost = errors.New("lease lost")

// renew rewrites the key if it is still at our revision. It returns an
// error matching errLost if the lease is no longer ours; any other error
// leaves the lease held until its validity ends.
func (l *lease) renew(ctx context.Context) error {
	sent := l.clock.Now()
	rev, err := l.kv.Update(ctx, l.key, l.value(sent), l.rev)
	if errors.Is(err, kvstore.ErrConflict) || errors.Is(err, jetstream.ErrKeyNotFound) {
		l.rev = 0
		return fmt.Errorf("renew lease %s: %w", l.key, errLost)
	}
	if err != nil {
		return fmt.Errorf("renew lease %s: %w", l.key, err)
	}
	l.rev, l.validUntil = rev, sent.Add(l.ttl-l.margin)
	return nil
}

// release deletes the key if it is still ours, so another instance takes
// over at once instead of after the TTL.
func (l *lease) release(ctx context.Context) error {
	if l.rev == 0 {
		return nil
	}
	rev := l.rev
	l.rev = 0
	if err := l.kv.Delete(ctx, l.key, rev); err != nil {
		return fmt.Errorf("release lease %s: %w", l.key, err)
	}
	return nil
}
