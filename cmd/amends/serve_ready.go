package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/projection"
)

const (
	// healthBucket is the KV bucket /readyz writes to, to learn that
	// JetStream accepts writes.
	healthBucket = "amends_health"
	// healthTTL is how long a probe's key lives: keys of stopped servers
	// vanish by themselves.
	healthTTL = time.Minute
	// probeEvery is how long a write probe's result is reused, so that
	// /readyz stays cheap however often it is asked.
	probeEvery = time.Second
	// probeTimeout bounds one write probe.
	probeTimeout = 2 * time.Second
)

// readyCheck is one condition of readiness: nil when met, otherwise an
// error saying what is wrong.
type readyCheck func(ctx context.Context) error

// readiness is serve's /readyz: every check in order, the first failure
// wins. Safe for concurrent use.
func readiness(checks ...readyCheck) func() error {
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		for _, c := range checks {
			if err := c(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

// natsConnected is ready while the connection to NATS is up.
func natsConnected(nc *nats.Conn) readyCheck {
	return func(context.Context) error {
		if !nc.IsConnected() {
			return fmt.Errorf("not connected to NATS (%s)", nc.Status())
		}
		return nil
	}
}

// indexCurrent is ready once the index has loaded the views and while its
// watch of the views bucket runs (it is restarted when it stops; until
// then answers may be stale).
func indexCurrent(ix *projection.Index) readyCheck {
	return func(context.Context) error {
		if err := ix.Healthy(); err != nil {
			return errors.New(strings.TrimSuffix(err.Error(), ": "+projection.ErrNotCurrent.Error()))
		}
		return nil
	}
}

// openHealth opens (or creates) the health bucket with the store's storage
// and replicas.
func openHealth(ctx context.Context, js jetstream.JetStream, storage jetstream.StorageType, replicas int) (jetstream.KeyValue, error) {
	b, err := kvstore.Open(ctx, js, kvstore.Spec{Config: jetstream.KeyValueConfig{
		Bucket: healthBucket, Description: "amends: /readyz write probes, one key per server",
		History: 1, TTL: healthTTL, Storage: storage, Replicas: replicas,
	}, MaxValue: 64, Disposable: true})
	if err != nil {
		return nil, fmt.Errorf("health: %w", err)
	}
	return b.KV(), nil
}

// writeProbe is ready while JetStream acknowledges a put to kv, under a key
// of this server's own. A result is reused for up to probeEvery, so one
// probe runs at a time and at most once per interval however often /readyz
// is asked; a clock that went back probes again.
type writeProbe struct {
	kv    jetstream.KeyValue
	key   string
	every time.Duration
	now   func() time.Time

	mu  sync.Mutex
	at  time.Time // of the last probe; zero before the first
	err error
}

func newWriteProbe(kv jetstream.KeyValue, now func() time.Time) *writeProbe {
	return &writeProbe{kv: kv, key: "readyz_" + uuid.NewString(), every: probeEvery, now: now}
}

func (p *writeProbe) check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if !p.at.IsZero() && !now.Before(p.at) && now.Sub(p.at) < p.every {
		return p.err
	}
	p.at = now
	p.err = nil
	if _, err := p.kv.Put(ctx, p.key, []byte(strconv.FormatInt(now.UnixMilli(), 10))); err != nil {
		p.err = fmt.Errorf("JetStream does not accept writes (a put to the KV bucket %s failed: %v): check the NATS server's log, its disk and its open-file limit", healthBucket, err)
	}
	return p.err
}
