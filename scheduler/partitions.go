package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/internal/token"
	"github.com/amends-dev/amends/kvstore"
	"github.com/amends-dev/amends/partition"
)

// DefaultPartitionsBucket holds the plan of the partitions (package
// partition) that the serve instances of one NATS cluster share.
const DefaultPartitionsBucket = "amends_partitions"

// The keys of the partitions in the lease bucket: one per live instance,
// one for the coordinator, one per partition held.
const (
	memberPrefix   = "partitions.member."
	coordinatorKey = "partitions.coordinator"
	heldPrefix     = "partitions.held."
	partitionsKeys = "partitions.>" // all of the above
	planKey        = "plan"
)

// partitionKeys encodes instance names and partition ids into key tokens.
var partitionKeys = token.Codec{Mark: '='}

// Partitions keeps this instance's share of the partitions, in the lease
// bucket (Leases) and the plan's bucket (OpenPartitions). Every instance
// holds a member lease while it runs. One of them, the holder of the
// coordinator lease, computes the plan (partition.Compute) from the live
// members, the records per processor its sizes function reports, and the
// plan in force, and writes it when it changes. Every instance then takes
// the lease of each partition the plan gives it, once the lease is free
// (its former holder released it or died and the TTL passed), renews it,
// and releases those the plan no longer gives it. So a partition is held
// by at most one instance at a time, counted by the holder from when it
// sent its last renewal, less a margin (as the scheduler's lease); and
// one that a dead instance held is held again within the TTL and a
// renewal interval of its member lease's expiry.
//
// Held and Changed are safe for concurrent use; Run runs once, and alone
// touches the leases.
type Partitions struct {
	leases   *Leases
	plans    *kvstore.Store[partition.Plan]
	reports  *kvstore.Store[Sizes] // the members' sizes, in the plan's bucket
	instance string
	token    string // instance, as a key token
	sizes    func() (held, unplaced map[string]uint64)
	clock    aggregate.Clock
	every    time.Duration
	margin   time.Duration
	logger   *slog.Logger
	ticks    <-chan time.Time

	// The leases, touched only by Run's goroutine.
	member, coordinator *lease
	held                map[string]*lease // partition id -> its lease, taken
	// known is the coordinator's memory of the processors' sizes (steady),
	// touched only by Run's goroutine.
	known map[string]uint64

	mu          sync.Mutex
	plan        partition.Plan       // the plan last read, for Places
	valid       map[string]time.Time // partition id -> until when it is held, for Held
	set         partition.Set        // valid's partitions, for Owns
	coordinates time.Time            // until when this instance holds the coordinator lease
	lastMembers []string             // the members the last round listed, for Members
	membersAt   time.Time            // when
	changed     chan struct{}        // closed and replaced when valid's partitions change
}

// PartitionsConfig configures NewPartitions.
type PartitionsConfig struct {
	// Instance names this instance: unique among the instances, 1 to 256
	// bytes. Required.
	Instance string
	// Sizes returns the records per processor this instance holds, and
	// those of the processors it saw records of that the plan does not
	// place (Places; what it knows of their size, 0 if nothing). Every
	// member reports them each round; the coordinator places the
	// partitions by their sum over the live members (the most any member
	// saw, for a processor no one holds). *projection.Index's Sizes is
	// one. Required.
	Sizes func() (held, unplaced map[string]uint64)
	// Every is how often leases are renewed and the plan recomputed
	// (default a third of the lease TTL); Margin how long before a lease's
	// expiry its holder stops counting on it (default a tenth of the TTL).
	// Every + Margin must be below the TTL.
	Every, Margin time.Duration
	// Clock measures the leases' validity (default the system clock).
	Clock aggregate.Clock
	// Logger receives the changes of holdings at Info and errors at Warn
	// (default discarded).
	Logger *slog.Logger
	// Ticks, if set, start the rounds instead of every Every (tests); a
	// freed lease or a new plan starts one either way.
	Ticks <-chan time.Time
}

// NewPartitions returns this instance's Partitions over leases and plans.
// A missing or invalid setting is an error wrapping ErrInvalidOption that
// names it.
func NewPartitions(leases *Leases, plans *kvstore.Store[partition.Plan], cfg PartitionsConfig) (*Partitions, error) {
	switch {
	case leases == nil || plans == nil:
		return nil, fmt.Errorf("partitions: the lease and plan stores are required: %w", ErrInvalidOption)
	case cfg.Instance == "" || len(cfg.Instance) > 256:
		return nil, fmt.Errorf("partitions: instance name %.20q must be 1 to 256 bytes: %w", cfg.Instance, ErrInvalidOption)
	case cfg.Sizes == nil:
		return nil, fmt.Errorf("partitions: Sizes is required: %w", ErrInvalidOption)
	}
	ttl := leases.TTL()
	cfg.Every = cmpOr(cfg.Every, ttl/3)
	cfg.Margin = cmpOr(cfg.Margin, ttl/10)
	if cfg.Every <= 0 || cfg.Margin <= 0 || cfg.Every+cfg.Margin >= ttl {
		return nil, fmt.Errorf("partitions: renewal every %s plus margin %s must be positive and below the lease TTL %s: %w", cfg.Every, cfg.Margin, ttl, ErrInvalidOption)
	}
	if cfg.Clock == nil {
		cfg.Clock = aggregate.ClockFunc(time.Now)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	tok, err := partitionKeys.Encode(cfg.Instance)
	if err != nil {
		return nil, fmt.Errorf("partitions: instance name: %v: %w", err, ErrInvalidOption)
	}
	p := &Partitions{leases: leases, plans: plans, reports: kvstore.For(plans.Bucket, sizesCodec), instance: cfg.Instance, token: tok, sizes: cfg.Sizes, clock: cfg.Clock,
		every: cfg.Every, margin: cfg.Margin, logger: cfg.Logger, ticks: cfg.Ticks, held: map[string]*lease{}, valid: map[string]time.Time{}, changed: make(chan struct{})}
	p.member = p.newLease(memberPrefix + tok)
	p.coordinator = p.newLease(coordinatorKey)
	return p, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func (p *Partitions) newLease(key string) *lease {
	return &lease{kv: p.leases.leases, key: key, holder: p.instance, ttl: p.leases.ttl, margin: p.margin, clock: p.clock}
}

// Held returns the partitions this instance holds now, sorted: those
// whose lease it took and whose validity has not ended.
func (p *Partitions) Held() []string {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id, until := range p.valid {
		if now.Before(until) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Coordinating reports whether this instance holds the coordinator lease
// now: it computes the plan.
func (p *Partitions) Coordinating() bool {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	return now.Before(p.coordinates)
}

// Changed returns a channel closed at the next change of what this
// instance holds.
func (p *Partitions) Changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changed
}

// Run keeps the leases until ctx ends, then releases them all (so that
// the others take its partitions at once) and returns nil. It runs a
// round every renewal interval, and at once when a lease of the
// partitions is freed or the plan changes, so that a dead instance's
// partitions are taken as soon as its leases expire. An instance killed
// without Run returning leaves its leases to expire.
func (p *Partitions) Run(ctx context.Context) error {
	ticks := p.ticks
	if ticks == nil {
		t := time.NewTicker(p.every)
		defer t.Stop()
		ticks = t.C
	}
	wake, watching := p.wakes(ctx)
	defer watching()
	for ctx.Err() == nil {
		last := time.Now()
		p.round(ctx)
		select {
		case <-ctx.Done():
		case <-ticks:
		case <-wake:
			// A round writes and frees leases itself, and a plan that
			// changed each round would wake the next at once: woken rounds
			// are apart by a tenth of the interval at least.
			t := time.NewTimer(time.Until(last.Add(p.every / 10)))
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	p.releaseAll(context.WithoutCancel(ctx))
	return nil
}

// round is one renewal: the member lease, the coordinator's plan, and the
// partitions' leases after the plan.
func (p *Partitions) round(ctx context.Context) {
	if err := keep(ctx, p.member); err != nil {
		p.warn(ctx, "partitions: cannot keep the member lease", "instance", p.instance, "err", err)
	}
	if err := p.reportSizes(ctx); err != nil {
		p.warn(ctx, "partitions: cannot report this member's sizes", "instance", p.instance, "err", err)
	}
	members, listErr := p.listMembers(ctx)
	if listErr == nil {
		p.mu.Lock()
		p.lastMembers, p.membersAt = members, p.clock.Now()
		p.mu.Unlock()
	}
	if err := keep(ctx, p.coordinator); err != nil {
		p.warn(ctx, "partitions: cannot keep the coordinator lease", "instance", p.instance, "err", err)
	}
	coordinating := p.coordinator.held(p.clock.Now())
	p.mu.Lock()
	p.coordinates = time.Time{}
	if coordinating {
		p.coordinates = p.coordinator.validUntil
	}
	p.mu.Unlock()
	if coordinating {
		err := listErr
		if err == nil {
			err = p.coordinate(ctx, members)
		}
		if err != nil {
			p.warn(ctx, "partitions: cannot compute the plan", "instance", p.instance, "err", err)
		}
	}
	plan, _, err := p.plans.Get(ctx, planKey)
	if err != nil && !errors.Is(err, kvstore.ErrNotFound) {
		p.warn(ctx, "partitions: cannot read the plan; holding what is held", "instance", p.instance, "err", err)
		p.renewHeld(ctx, nil)
		return
	}
	p.mu.Lock()
	p.plan = plan
	p.mu.Unlock()
	p.renewHeld(ctx, plan.Held(p.instance))
}

// Places reports whether the plan last read places the records of
// processor: a processor it does not place is reported by the members
// that see its records (Sizes), and placed by the coordinator's next plan.
func (p *Partitions) Places(processor string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.plan.Owners[p.plan.Of(processor, "")]
	return ok
}

// keep takes l if it is not held and renews it if it is.
func keep(ctx context.Context, l *lease) error {
	if l.rev == 0 {
		_, err := l.acquire(ctx)
		return err
	}
	err := l.renew(ctx)
	if errors.Is(err, errLost) {
		_, err = l.acquire(ctx)
	}
	return err
}

// coordinate computes the plan from the live members and writes it if it
// changed.
func (p *Partitions) coordinate(ctx context.Context, members []string) error {
	prev, rev, err := p.plans.Get(ctx, planKey)
	if err != nil && !errors.Is(err, kvstore.ErrNotFound) {
		if !errors.Is(err, kvstore.ErrInvalid) {
			return err
		}
		prev = partition.Plan{} // quarantined by the store: computed anew
	}
	sizes, err := p.sizesOf(ctx, members)
	if err != nil {
		return err
	}
	plan, err := partition.Compute(p.steady(sizes, prev), members, prev)
	if err != nil {
		return err
	}
	if rev != 0 && reflect.DeepEqual(plan, prev) {
		return nil
	}
	if rev == 0 {
		_, err = p.plans.Put(ctx, planKey, plan)
	} else {
		_, err = p.plans.Update(ctx, planKey, plan, rev)
	}
	if err == nil {
		p.logger.Info("partitions: plan changed", "coordinator", p.instance, "instances", len(members), "partitions", len(plan.Owners))
	}
	return err
}

// steady returns the sizes to place by: the members' reports, with every
// processor of prev that none reports at its last known size, if this
// coordinator knows it. Its records are moving: its old holder dropped
// them and its new one is loading them. (A guess of 1 for a processor it
// does not know placed it as if empty, and the plan kept the imbalance.) Placed by the reports alone, a kill of one of three instances with
// a hundred processors changed the plan every round for half a minute:
// each plan left out the processors on the move, and put them back once
// loaded, moving others again. (A size is not held up to its last known
// value: a partition reported by both its old and its new holder for a
// moment was then counted twice for good.) Run's goroutine only.
func (p *Partitions) steady(sizes map[string]uint64, prev partition.Plan) map[string]uint64 {
	if p.known == nil {
		p.known = map[string]uint64{}
	}
	out := maps.Clone(sizes)
	if out == nil {
		out = map[string]uint64{}
	}
	for id := range prev.Owners {
		if proc, _, ok := prev.SlotsOf(id); ok {
			if _, reported := out[proc]; !reported && p.known[proc] > 0 {
				out[proc] = p.known[proc]
			}
		}
	}
	maps.Copy(p.known, out)
	return out
}

// Join takes this instance's member lease before Run, so that a second
// process with the instance's name is found at its start: it returns an
// error matching ErrInstanceTaken while another process holds the lease
// (another instance of this name, or this one's last run until its
// lease's TTL passes). Run then renews the lease. Not safe for concurrent
// use with Run; calling it again once it succeeded does nothing.
func (p *Partitions) Join(ctx context.Context) error {
	if p.member.rev != 0 {
		return nil
	}
	ok, err := p.member.acquire(ctx)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("instance %q: %w", p.instance, ErrInstanceTaken)
	}
	return nil
}

// Plan reads the plan in force from its bucket: before the coordinator's
// first plan, the empty plan, which places nothing. A plan that does not
// validate, or a failed read, is an error. Safe for concurrent use; a
// fanout.Querier's Plan.
func (p *Partitions) Plan(ctx context.Context) (partition.Plan, error) {
	return PlanIn(ctx, p.plans)
}

// PlanIn reads the plan in force from plans (OpenPartitions), as
// Partitions.Plan does, for a program that runs no Partitions.
func PlanIn(ctx context.Context, plans *kvstore.Store[partition.Plan]) (partition.Plan, error) {
	plan, _, err := plans.Get(ctx, planKey)
	if errors.Is(err, kvstore.ErrNotFound) {
		return partition.Plan{}, nil
	}
	return plan, err
}

// Members returns the instances whose member lease is in the bucket (the
// live ones, and a dead one until its lease expires), sorted, at most
// partition.MaxInstances: as Run's last round listed them, if that was
// within two rounds, so that a query does not list the bucket's keys (a
// consumer made and dropped each time); else listed now. Safe for
// concurrent use; a fanout.Querier's Members.
func (p *Partitions) Members(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	cached, at := p.lastMembers, p.membersAt
	p.mu.Unlock()
	if !at.IsZero() && p.clock.Now().Sub(at) < 2*p.every {
		return slices.Clone(cached), nil
	}
	return p.listMembers(ctx)
}

// listMembers lists the instances whose member lease is in the bucket,
// as Members says.
func (p *Partitions) listMembers(ctx context.Context) ([]string, error) {
	out, err := p.namesUnder(ctx, memberPrefix)
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	if len(out) > partition.MaxInstances {
		p.logger.Warn("partitions: more instances than a plan places partitions on; the last by name get none",
			"instances", len(out), "limit", partition.MaxInstances)
		out = out[:partition.MaxInstances]
	}
	return out, nil
}

// releaseAll gives up every lease this instance holds, within
// releaseTimeout.
func (p *Partitions) releaseAll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	for id, l := range p.held {
		p.forget(id)
		_ = l.release(ctx)
	}
	_ = p.coordinator.release(ctx)
	_ = p.member.release(ctx)
	_ = p.reports.Delete(ctx, sizesPrefix+p.token, 0)
	p.mu.Lock()
	p.coordinates = time.Time{}
	p.mu.Unlock()
	p.swap(map[string]*lease{})
}
