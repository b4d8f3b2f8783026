package scheduler

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/internal/kvwatch"
)

// wakes returns a channel that is ready when Run should run a round before
// its next tick: a lease of the partitions was freed (its holder released
// it, or the server expired it and wrote its marker), a member joined
// (its lease written and not listed by the last round), or the plan was
// written. Without it, a survivor saw a dead instance's leases expire
// only at its next round, and took its partitions at the round after the
// coordinator's new plan: two renewal intervals after the TTL. A watch
// that cannot start or ends is opened again every renewal interval; the
// ticks go on meanwhile. wait returns once the watches stopped, after ctx
// ended.
func (p *Partitions) wakes(ctx context.Context) (wake <-chan struct{}, wait func()) {
	ch := make(chan struct{}, 1)
	signal := func() {
		select {
		case ch <- struct{}{}:
		default: // one is pending: the round it starts sees this change too
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		p.watchLoop(ctx, func(ctx context.Context) (jetstream.KeyWatcher, error) {
			return p.leases.leases.KV().Watch(ctx, partitionsKeys, jetstream.UpdatesOnly(), jetstream.MetaOnly())
		}, func(e jetstream.KeyValueEntry) {
			if e.Operation() != jetstream.KeyValuePut || p.joined(e.Key()) {
				signal() // released, or expired; or a member the last round did not list
			}
		})
	})
	wg.Go(func() {
		p.watchLoop(ctx, func(ctx context.Context) (jetstream.KeyWatcher, error) {
			return p.plans.KV().Watch(ctx, planKey, jetstream.UpdatesOnly(), jetstream.MetaOnly())
		}, func(jetstream.KeyValueEntry) { signal() })
	})
	return ch, wg.Wait
}

// watchLoop follows the watch open makes, passing its entries to apply,
// until ctx ends; it opens it again a renewal interval after it fails.
func (p *Partitions) watchLoop(ctx context.Context, open func(context.Context) (jetstream.KeyWatcher, error), apply func(jetstream.KeyValueEntry)) {
	for ctx.Err() == nil {
		w, err := open(ctx)
		if err == nil {
			err = kvwatch.Follow(ctx, w, apply)
			_ = w.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		p.logger.Debug("partitions: a watch of the leases ended; the rounds go on at their interval", "instance", p.instance, "err", err)
		t := time.NewTimer(p.every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// joined reports whether key is the member lease of an instance the last
// round did not list: one that joined since, which the coordinator
// places at once.
func (p *Partitions) joined(key string) bool {
	tok, ok := strings.CutPrefix(key, memberPrefix)
	if !ok {
		return false
	}
	name, err := partitionKeys.Decode(tok)
	if err != nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !slices.Contains(p.lastMembers, name)
}
