package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/amends-dev/amends/partition"
)

// The leases of the partitions: taken, renewed, released after the plan.

// leaseCalls bounds the lease requests a round sends at once: with a
// hundred partitions, renewing them one after the other took longer than
// the TTL under load (each is a replicated write), and leases were lost.
const leaseCalls = 16

// renewHeld takes the leases of the partitions in want that are free,
// renews those held and wanted, and releases those held and not wanted;
// with want nil (the plan could not be read), it renews what it holds.
func (p *Partitions) renewHeld(ctx context.Context, want []string) {
	wanted := map[string]bool{}
	for _, id := range want {
		wanted[id] = true
	}
	var renew []string
	for id, l := range p.held {
		if want != nil && !wanted[id] {
			p.forget(id) // no longer counted on before another can take it
			if err := l.release(ctx); err != nil {
				p.warn(ctx, "partitions: cannot release a partition; it expires", "partition", id, "err", err)
			}
			continue
		}
		renew = append(renew, id)
	}
	errs := leaseAll(renew, func(_ int, id string) error { return p.held[id].renew(ctx) })
	next := map[string]*lease{}
	for i, id := range renew {
		if !errors.Is(errs[i], errLost) {
			next[id] = p.held[id]
		}
	}
	p.take(ctx, wanted, next)
	p.swap(next)
}

// leaseAll runs call for each of ids (with its position), at most
// leaseCalls at once, and returns their errors in order.
func leaseAll(ids []string, call func(i int, id string) error) []error {
	errs := make([]error, len(ids))
	var g errgroup.Group
	g.SetLimit(leaseCalls)
	for i, id := range ids {
		g.Go(func() error {
			errs[i] = call(i, id)
			return nil
		})
	}
	_ = g.Wait()
	return errs
}

// take adds to next the leases of the partitions wanted and not in next
// that it can take: free, and no other instance holding a record of them.
func (p *Partitions) take(ctx context.Context, wanted map[string]bool, next map[string]*lease) {
	var free []string
	for id := range wanted {
		if next[id] == nil {
			free = append(free, id)
		}
	}
	if len(free) == 0 {
		return
	}
	// Held by other instances: read once a round.
	others, err := p.heldByOthers(ctx, next)
	if err != nil {
		p.warn(ctx, "partitions: cannot list the partitions held; taking none this round", "instance", p.instance, "err", err)
		return
	}
	leases := map[string]*lease{}
	free = slices.DeleteFunc(free, func(id string) bool {
		if i := slices.IndexFunc(others, func(o string) bool { return partition.Overlap(o, id) }); i >= 0 {
			// Another instance, on another plan, still holds records of
			// it (a split or a merge moving): taken once that one is gone.
			p.logger.Debug("partitions: waiting for an overlapping partition to be released", "partition", id, "held", others[i])
			return true
		}
		tok, err := partitionKeys.Encode(id)
		if err != nil {
			return true
		}
		leases[id] = p.newLease(heldPrefix + tok)
		return false
	})
	taken := make([]bool, len(free))
	errs := leaseAll(free, func(i int, id string) error {
		var err error
		taken[i], err = leases[id].acquire(ctx)
		return err
	})
	var got []string
	for i, id := range free {
		switch {
		case taken[i]:
			next[id] = leases[id]
			got = append(got, id)
		case errs[i] != nil:
			p.warn(ctx, "partitions: cannot take a partition", "partition", id, "err", errs[i])
		}
	}
	p.recheck(ctx, got, next)
}

// recheck releases the partitions just taken of which another instance
// took an overlapping one meanwhile: two instances on two plans (one
// splitting a processor, one not yet) may each list the leases, see no
// overlap and take theirs at once. Each checks again once it holds its
// lease, before it counts on it, and gives it up if an overlapping lease
// is there: of two that overlap, the one taken last always sees the
// other, so they are never both held (both may give up, and take again
// next round). A list that fails gives up what was taken.
func (p *Partitions) recheck(ctx context.Context, taken []string, next map[string]*lease) {
	if len(taken) == 0 {
		return
	}
	others, err := p.heldByOthers(ctx, next)
	for _, id := range taken {
		if err == nil && !slices.ContainsFunc(others, func(o string) bool { return partition.Overlap(o, id) }) {
			continue
		}
		p.logger.Info("partitions: gave up a partition another instance took an overlapping part of at once", "partition", id, "err", err)
		if rerr := next[id].release(ctx); rerr != nil {
			p.warn(ctx, "partitions: cannot release a partition; it expires", "partition", id, "err", rerr)
		}
		delete(next, id)
	}
}

// heldByOthers returns the partitions whose lease is in the bucket and not
// in mine.
func (p *Partitions) heldByOthers(ctx context.Context, mine map[string]*lease) ([]string, error) {
	held, err := p.namesUnder(ctx, heldPrefix)
	return slices.DeleteFunc(held, func(id string) bool { return mine[id] != nil }), err
}

// namesUnder returns the names (instances, partitions) of the lease
// bucket's keys under prefix; a key whose rest is no name this package
// wrote is left out.
func (p *Partitions) namesUnder(ctx context.Context, prefix string) ([]string, error) {
	lister, err := p.leases.leases.KV().ListKeysFiltered(ctx, prefix+">")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer func() { _ = lister.Stop() }()
	var out []string
	for k := range lister.Keys() {
		if name, err := partitionKeys.Decode(strings.TrimPrefix(k, prefix)); err == nil {
			out = append(out, name)
		}
	}
	return out, nil
}

// Owns reports whether this instance holds the partition of the record of
// processor with id recordID now (its lease taken and its validity not
// ended): the partition's work on that record is this instance's.
func (p *Partitions) Owns(processor, recordID string) bool {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.set.Of(processor, recordID)
	until, held := p.valid[id]
	return ok && held && now.Before(until)
}

// Leads reports whether this instance holds, now, the partition of
// processor's slot 0 (partition.Set.Lead): the processor's work that is
// not per record (its recovery drains, its releases after a deploy) is
// this instance's. At most one instance leads a processor at a time, as
// for any partition; none does while that partition moves.
func (p *Partitions) Leads(processor string) bool {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.set.Lead(processor)
	until, held := p.valid[id]
	return ok && held && now.Before(until)
}

// HoldsAnyOf reports whether this instance holds a partition of
// processor's records now.
func (p *Partitions) HoldsAnyOf(processor string) bool {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, until := range p.valid {
		if proc, _, err := partition.SlotsOfID(id); err == nil && proc == processor && now.Before(until) {
			return true
		}
	}
	return false
}

// holdsAny reports whether this instance holds a partition now.
func (p *Partitions) holdsAny() bool {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, until := range p.valid {
		if now.Before(until) {
			return true
		}
	}
	return false
}

// forget stops counting on partition id for Held.
func (p *Partitions) forget(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.valid, id)
}

// swap makes next what is held, and signals a change.
func (p *Partitions) swap(next map[string]*lease) {
	valid := make(map[string]time.Time, len(next))
	for id, l := range next {
		valid[id] = l.validUntil
	}
	same := slices.Equal(slices.Sorted(maps.Keys(next)), slices.Sorted(maps.Keys(p.held)))
	p.held = next
	p.mu.Lock()
	defer p.mu.Unlock()
	p.valid = valid
	if same {
		return
	}
	p.set = partition.NewSet(slices.Collect(maps.Keys(next)))
	p.logger.Info("partitions: holdings changed", "instance", p.instance, "held", len(next))
	close(p.changed)
	p.changed = make(chan struct{})
}

// warn logs a failure of a round at Warn, or at Debug once ctx ended: a
// round that Run's end cuts short fails every call it has under way.
func (p *Partitions) warn(ctx context.Context, msg string, args ...any) {
	level := slog.LevelWarn
	if ctx.Err() != nil {
		level = slog.LevelDebug
	}
	p.logger.Log(ctx, level, msg, args...)
}
