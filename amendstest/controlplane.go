package amendstest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

// Plane is the control plane of amends running inside one test: the
// projector that turns ExecutionFailed records into views, the index that
// answers queries, the record service, and the scheduler that prepares due
// records, on a clock the test moves. The scheduler passes only when the
// test calls Tick, so a test decides when retries are due and taken. All
// of it stops with the test. A Plane is safe for concurrent use.
type Plane struct {
	// Index is the read model: Get, List, Count, Summary, Due.
	Index *projection.Index
	// Records runs commands on the records, as an operator or the
	// scheduler does (its clock is the plane's).
	Records *aggregate.Service
	// Scheduler prepares the records due at the plane's now on each Tick.
	Scheduler *scheduler.Scheduler

	tb       testing.TB
	js       jetstream.JetStream
	store    *jsstore.Store
	views    *projection.Views
	stream   string
	consumer string
	ticks    chan time.Time
	now      atomic.Int64 // epoch ms
}

// Timeout bounds every wait of a Plane: generous, so tests hold on a busy
// machine.
const Timeout = 30 * time.Second

// ControlPlane starts the control plane on js for tb (see Plane) with its
// clock at the current time, and returns once the index is loaded and the
// scheduler holds its lease. It fails the test if a part cannot start.
//
// The service under test must run on the plane's clock (a Plane is an
// aggregate.Clock): its records are then stamped with the time the test
// moves, and Advance makes them due. A service on the system clock stamps
// them with the real time, and Tick may prepare nothing.
//
//	js := amendstest.JetStream(t)
//	cp := amendstest.ControlPlane(t, js)
//	svc, _ := amends.New(js, "billing", amends.WithClock(cp)) // the service under test
//	// ... svc.Start(ctx); a function fails and is recorded ...
//	cp.Advance(3 * time.Minute) // its first retry is due (minBackoff 180 s)
//	cp.Tick()                   // the scheduler prepares it; svc replays it
//
// TestControlPlaneAsDocumented runs exactly this.
func ControlPlane(tb testing.TB, js jetstream.JetStream) *Plane {
	tb.Helper()
	ctx := context.Background()
	p := &Plane{tb: tb, js: js, ticks: make(chan time.Time)}
	p.now.Store(time.Now().UnixMilli())
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	clock := aggregate.ClockFunc(p.Now)
	var err error
	if p.store, err = jsstore.New(js, jsstore.WithClock(p.Now)); err != nil {
		tb.Fatalf("amendstest: event store: %v", err)
	}
	if p.views, err = projection.OpenViews(ctx, js); err != nil {
		tb.Fatalf("amendstest: views bucket: %v", err)
	}
	proj, err := projection.NewProjector(js, p.store, p.views, projection.WithLogger(quiet))
	if err != nil {
		tb.Fatalf("amendstest: projector: %v", err)
	}
	p.stream, p.consumer = p.store.StreamName(aggregate.Context), proj.ConsumerConfig().Durable
	if p.Index, err = projection.NewIndex(p.views, p.store); err != nil {
		tb.Fatalf("amendstest: index: %v", err)
	}
	p.Records = aggregate.NewService(p.store, aggregate.WithClock(clock))
	leases, err := scheduler.OpenLeases(ctx, js)
	if err != nil {
		tb.Fatalf("amendstest: scheduler leases: %v", err)
	}
	p.Scheduler, err = scheduler.New(p.Index, p.Records, leases, scheduler.WithClock(clock), scheduler.WithTicks(p.ticks),
		scheduler.WithLogger(quiet), scheduler.WithInstance("amendstest"))
	if err != nil {
		tb.Fatalf("amendstest: scheduler: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{proj.Run, p.Index.Run, p.Scheduler.Run} {
		wg.Go(func() {
			if err := run(runCtx); err != nil && runCtx.Err() == nil {
				tb.Errorf("amendstest: control plane: %v", err)
			}
		})
	}
	tb.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case <-p.Index.Ready():
	case <-time.After(Timeout):
		tb.Fatalf("amendstest: the index did not load within %s", Timeout)
	}
	p.until("the scheduler holds its lease", func() bool { return p.Scheduler.Stats().Active })
	return p
}

// Now is the plane's time: the scheduler's and the record service's.
func (p *Plane) Now() time.Time { return time.UnixMilli(p.now.Load()) }

// Advance moves the plane's clock forward by d (a negative d is an
// error of the test).
func (p *Plane) Advance(d time.Duration) {
	if d < 0 {
		p.tb.Fatalf("amendstest: Advance(%s): the clock only moves forward", d)
	}
	p.now.Add(d.Milliseconds())
}

// Settle returns once every record command stored so far is projected and
// in the index, so that what the test reads or the scheduler takes next
// includes it. It reads every view once: fine for a test's few records.
func (p *Plane) Settle() {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	p.until("the projector has projected every record command", func() bool {
		c, err := p.js.Consumer(ctx, p.stream, p.consumer)
		if err != nil {
			return errors.Is(err, jetstream.ErrStreamNotFound) // no record yet
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
	keys, err := p.views.ListKeys(ctx)
	if err != nil {
		p.tb.Fatalf("amendstest: list the views: %v", err)
	}
	for key := range keys.Keys() {
		e, err := p.views.Get(ctx, key)
		if err != nil {
			continue // removed meanwhile
		}
		_, id, err := projection.ParseKey(key)
		if err != nil {
			continue
		}
		var v struct {
			Version uint64 `json:"version"`
		}
		if json.Unmarshal(e.Value(), &v) != nil {
			continue
		}
		if err := p.Index.WaitFor(ctx, id, v.Version); err != nil {
			p.tb.Fatalf("amendstest: the index did not reach record %s version %d within %s", id, v.Version, Timeout)
		}
	}
}

// Tick settles (see Settle), runs one scheduler pass at the plane's now and
// returns once it has ended, with the number of records it prepared. The
// replays of those records run in the services' processors afterwards:
// wait for them with WaitStatus.
func (p *Plane) Tick() int {
	p.tb.Helper()
	p.Settle()
	before := p.Scheduler.Stats()
	select {
	case p.ticks <- p.Now():
	case <-time.After(Timeout):
		p.tb.Fatalf("amendstest: the scheduler took no tick within %s", Timeout)
	}
	p.until("the scheduler's pass ends", func() bool {
		s := p.Scheduler.Stats()
		return s.Passes+s.Idle > before.Passes+before.Idle
	})
	return int(p.Scheduler.Stats().Prepared - before.Prepared)
}

// WaitStatus waits until record id is in status and returns its view; it
// fails the test after Timeout, naming the status the record had.
func (p *Plane) WaitStatus(id string, status aggregate.Status) api.View {
	p.tb.Helper()
	var last api.View
	deadline := time.Now().Add(Timeout)
	for time.Now().Before(deadline) {
		v, err := p.Index.Get(context.Background(), id)
		if err == nil && v.State.Status == status {
			return v
		}
		last = v
		time.Sleep(5 * time.Millisecond)
	}
	p.tb.Fatalf("amendstest: record %s did not become %s within %s (it is %q at version %d)", id, status, Timeout, last.State.Status, last.Version)
	return last
}

// until polls cond every few milliseconds until it holds, failing the test
// after Timeout.
func (p *Plane) until(what string, cond func() bool) {
	p.tb.Helper()
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			p.tb.Fatalf("amendstest: %s: not within %s", what, Timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
