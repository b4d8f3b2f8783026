package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/recorder"
	"github.com/amends-dev/amends/scheduler"
)

// StormConfig is the bad day the storm plays: events at a steady rate to
// three functions, one of which (Mailer.send) fails every call for a
// while; its sibling in the same processor (Mailer.audit) and a function
// of another processor (Ledger.post) always succeed.
type StormConfig struct {
	// Rate is how many events are appended per second.
	Rate int `json:"rate"`
	// Events is how many are appended in all; 0 means Rate × (Before +
	// Outage).
	Events int `json:"events"`
	// Before is the healthy time before the outage starts, for the
	// baseline latency.
	Before time.Duration `json:"beforeNs"`
	// Outage is how long every call of Mailer.send fails; with FlapDown
	// set, how long the dependency flaps: down FlapDown, up FlapUp, down
	// again, and so on, down first.
	Outage   time.Duration `json:"outageNs"`
	FlapDown time.Duration `json:"flapDownNs,omitempty"`
	FlapUp   time.Duration `json:"flapUpNs,omitempty"`
	// ImmediateRetries is the processor's immediate retries per failure;
	// -1 keeps its default (processor.DefaultRetry).
	ImmediateRetries int `json:"immediateRetries"`
	// RetryWait is the wait before the first immediate retry (doubling
	// after); 0 keeps the default's.
	RetryWait time.Duration `json:"retryWaitNs"`
	// SchedulerPeriod and SchedulerBatch are the scheduler's pass period
	// and records prepared per pass.
	SchedulerPeriod time.Duration `json:"schedulerPeriodNs"`
	SchedulerBatch  int           `json:"schedulerBatch"`
	// MinBackoff is the records' retry spec min backoff: the wait before a
	// record is due again.
	MinBackoff time.Duration `json:"minBackoffNs"`
	// Drain bounds the wait, after the outage, for every event to have a
	// successful call of every function.
	Drain time.Duration `json:"drainNs"`
	// Circuit is the functions' circuit policy (the zero Policy is
	// circuit.DefaultPolicy; Off turns the circuits off); DrainRate the
	// recovery drain's rate (0: scheduler.DefaultDrainRate).
	Circuit   circuit.Policy `json:"circuit"`
	DrainRate float64        `json:"drainRate,omitempty"`
	// Processor are more options of the service's processor (tests).
	Processor []processor.Option `json:"-"`
	// Logger receives the service's and control plane's logs (nil: none).
	Logger *slog.Logger `json:"-"`
}

// The storm's functions.
var (
	stormSend  = processor.Function{Processor: "Mailer", Name: "send", AggregateTypes: []string{"order"}, Events: []string{"order_placed"}}
	stormAudit = processor.Function{Processor: "Mailer", Name: "audit", AggregateTypes: []string{"order"}, Events: []string{"order_placed"}}
	stormPost  = processor.Function{Processor: "Ledger", Name: "post", AggregateTypes: []string{"order"}, Events: []string{"order_placed"}}
)

// StormFunctions names the storm's functions in its results.
var StormFunctions = []string{"Mailer.send", "Mailer.audit", "Ledger.post"}

// Latency is a distribution of append-to-call latencies, in milliseconds.
type Latency struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50Ms"`
	P99 float64 `json:"p99Ms"`
	Max float64 `json:"maxMs"`
}

// StormPhases are a function's first-call latencies of the events appended
// before, during and after the outage.
type StormPhases struct {
	Before Latency `json:"before"`
	During Latency `json:"during"`
	After  Latency `json:"after"`
}

// StormResult is what a storm measured.
type StormResult struct {
	Config StormConfig `json:"config"`
	// Events is how many events were appended.
	Events int `json:"events"`
	// Sibling is Mailer.audit's latency from append to its first call,
	// Other is Ledger.post's.
	Sibling StormPhases `json:"sibling"`
	Other   StormPhases `json:"otherProcessor"`
	// Calls counts every call of each function (live, immediate retries,
	// redeliveries and replays); CallsDuringOutage those made while it
	// lasted, ReplayCallsDuringOutage the replays among them.
	Calls                   map[string]uint64 `json:"calls"`
	CallsDuringOutage       map[string]uint64 `json:"callsDuringOutage"`
	ReplayCallsDuringOutage map[string]uint64 `json:"replayCallsDuringOutage"`
	// Refused counts the calls each function's circuit refused (their
	// events recorded at once with errorCode CircuitOpen); Probes the calls
	// made as its probe.
	Refused map[string]uint64 `json:"refused"`
	Probes  map[string]uint64 `json:"probes"`
	// Transitions are Mailer.send's circuit transitions, At in seconds
	// from the outage's start.
	Transitions []StormTransition `json:"transitions"`
	// FinalCircuit is Mailer.send's circuit at the end.
	FinalCircuit circuit.Phase `json:"finalCircuit"`
	// Drain is Mailer.send's recovery drain at the end (its last one).
	Drain *scheduler.Drain `json:"drain,omitempty"`
	// DrainProbes counts the replays the scheduler prepared as the circuit's
	// probe.
	DrainProbes uint64 `json:"drainProbes"`
	// RecordsOpen counts the storm's records not SUCCEEDED at the end;
	// RecordsByStatus all of them by status (nothing lost: every failed
	// event has its record; nothing duplicated: one record per event and
	// function, by the records' deterministic ids).
	RecordsOpen     int            `json:"recordsOpen"`
	RecordsByStatus map[string]int `json:"recordsByStatus"`
	// ReplayCalls counts the calls of replays (of records the scheduler
	// prepared), included in Calls.
	ReplayCalls map[string]uint64 `json:"replayCalls"`
	// Reruns counts calls of a function on an event it had already
	// succeeded on.
	Reruns map[string]uint64 `json:"reruns"`
	// Succeeded counts the events each function succeeded on at least once.
	Succeeded map[string]int `json:"succeeded"`
	// RecordsCreated counts new ExecutionFailed records; AlreadyRecorded
	// the recordings of a failure that had its record already.
	RecordsCreated  uint64 `json:"recordsCreated"`
	AlreadyRecorded uint64 `json:"alreadyRecorded"`
	// BacklogPeak is the largest pending + ack-pending count seen on each
	// processor's consumer.
	BacklogPeak map[string]uint64 `json:"backlogPeak"`
	// Recovery is the time from the outage's end until every event had a
	// successful call of every function; -1 if that did not happen within
	// Drain.
	RecoverySeconds float64 `json:"recoverySeconds"`
	// Seconds is how long the whole storm took.
	Seconds float64 `json:"seconds"`
}

// StormTransition is a circuit transition of the storm, At seconds after
// the outage began.
type StormTransition struct {
	At       float64       `json:"at"`
	From     circuit.Phase `json:"from"`
	To       circuit.Phase `json:"to"`
	Cause    circuit.Cause `json:"cause"`
	Failures int           `json:"failures,omitempty"`
	Calls    int           `json:"calls,omitempty"`
	CoolDown float64       `json:"coolDownS,omitempty"`
}

// stormLatencies collects one function's first-call latencies by phase.
type stormLatencies struct {
	before, during, after []time.Duration
}

// stormState is what the functions observe, shared by their calls.
type stormState struct {
	failing       atomic.Bool
	outage        atomic.Bool // the outage is on: count calls during it
	mu            sync.Mutex
	ok            [3]map[string]bool // per function: events it succeeded on
	seen          [3]map[string]bool // per function: events it was called on
	lat           [3]stormLatencies
	calls         [3]atomic.Uint64
	replays       [3]atomic.Uint64
	during        [3]atomic.Uint64
	replaysDuring [3]atomic.Uint64
	reruns        [3]atomic.Uint64
	// outageStart and outageEnd are unix nanos, appended events carry
	// their append time in their body.
	outageStart, outageEnd atomic.Int64
	allOK                  chan struct{} // closed once every function succeeded on every event
	total                  int
	doneOK                 int // (function, event) pairs succeeded
}

type stormBody struct {
	At int64 `json:"at"` // unix nanos of the append
}

// call notes a call of function i on d and returns whether it succeeds.
func (s *stormState) call(ctx context.Context, i int, d *processor.Delivery, body stormBody) error {
	s.calls[i].Add(1)
	_, replay := processor.CompensationFrom(ctx)
	if replay {
		s.replays[i].Add(1)
	}
	if s.outage.Load() {
		s.during[i].Add(1)
		if replay {
			s.replaysDuring[i].Add(1)
		}
	}
	fail := i == 0 && s.failing.Load()
	id := d.Event.ID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ok[i][id] {
		s.reruns[i].Add(1)
	}
	if !s.seen[i][id] {
		s.seen[i][id] = true
		lat := time.Duration(time.Now().UnixNano() - body.At)
		switch {
		case body.At < s.outageStart.Load():
			s.lat[i].before = append(s.lat[i].before, lat)
		case body.At < s.outageEnd.Load():
			s.lat[i].during = append(s.lat[i].during, lat)
		default:
			s.lat[i].after = append(s.lat[i].after, lat)
		}
	}
	if fail {
		return failure.Recoverable(errors.New("smtp 451: mail service unavailable"))
	}
	if !s.ok[i][id] {
		s.ok[i][id] = true
		s.doneOK++
		if s.doneOK == s.total {
			close(s.allOK)
		}
	}
	return nil
}

// outcomes counts the recorder's outcomes.
type outcomes struct {
	processor.FailureRecorder
	created, already atomic.Uint64
}

// Describe forwards to the recorder, so refused calls' records carry the
// last failure's fingerprint.
func (o *outcomes) Describe(f aggregate.FunctionInfo, err error, rules failure.Rules) (aggregate.ErrorDetails, aggregate.Recoverability) {
	if d, ok := o.FailureRecorder.(processor.FailureDescriber); ok {
		return d.Describe(f, err, rules)
	}
	return aggregate.ErrorDetails{ErrorCode: "Unclassified", ErrorMsg: err.Error()}, failure.Classify(err, rules)
}

func (o *outcomes) Record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	out, err := o.FailureRecorder.Record(ctx, x)
	switch out {
	case processor.OutcomeRecorded:
		o.created.Add(1)
	case processor.OutcomeAlreadyRecorded:
		o.already.Add(1)
	}
	return out, err
}

// withDefaults fills what c leaves zero.
func (c StormConfig) withDefaults() (StormConfig, error) {
	switch {
	case c.Rate < 1 || c.Rate > 10000:
		return c, fmt.Errorf("storm rate must be between 1 and 10000 events/s, got %d", c.Rate)
	case c.Before < 0 || c.Outage < 0:
		return c, fmt.Errorf("storm phases must not be negative, got before %s and outage %s", c.Before, c.Outage)
	case c.FlapDown < 0 || c.FlapUp < 0 || (c.FlapDown == 0 && c.FlapUp != 0):
		return c, fmt.Errorf("storm flapping must be down and up for positive times, got down %s and up %s", c.FlapDown, c.FlapUp)
	case c.Events < 0 || c.Events > 1_000_000:
		return c, fmt.Errorf("storm events must be between 0 (rate × duration) and 1000000, got %d", c.Events)
	case c.ImmediateRetries < -1 || c.ImmediateRetries > 10:
		return c, fmt.Errorf("storm immediate retries must be between -1 (the default) and 10, got %d", c.ImmediateRetries)
	}
	if c.Events == 0 {
		c.Events = max(1, int(float64(c.Rate)*(c.Before+c.Outage).Seconds()))
	}
	if c.SchedulerPeriod <= 0 {
		c.SchedulerPeriod = scheduler.DefaultPeriod
	}
	if c.SchedulerBatch <= 0 {
		c.SchedulerBatch = scheduler.DefaultBatch
	}
	if c.FlapDown > 0 && c.FlapUp == 0 {
		c.FlapUp = c.FlapDown
	}
	if c.Drain <= 0 {
		c.Drain = 10 * time.Minute
	}
	return c, nil
}

// RunStorm plays the storm c on env's JetStream (streams and buckets of
// its own, deleted afterwards) and returns what it measured. It returns
// once every event had a successful call of every function, or c.Drain
// after the outage's end, or ctx ends (then with ctx's error). Not safe
// to run twice at once on one env.
func RunStorm(ctx context.Context, env *Env, c StormConfig) (StormResult, error) {
	c, err := c.withDefaults()
	if err != nil {
		return StormResult{}, err
	}
	log := c.Logger
	if log == nil {
		log = discard
	}
	r, err := newRig(ctx, env, "storm")
	if err != nil {
		return StormResult{}, err
	}
	defer r.close()
	names := "bench_" + env.Prefix + "_storm"
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	views, err := projection.OpenViews(ctx, env.JS, projection.WithBucket(names+"_views"), projection.WithBucketStorage(env.Storage))
	if err != nil {
		return StormResult{}, err
	}
	cleanups = append(cleanups, func() { _ = env.JS.DeleteKeyValue(context.Background(), names+"_views") })
	proj, err := projection.NewProjector(env.JS, r.store, views, projection.WithDurable(names), projection.WithLogger(log))
	if err != nil {
		return StormResult{}, err
	}
	index, err := projection.NewIndex(views, r.store)
	if err != nil {
		return StormResult{}, err
	}
	leases, err := scheduler.OpenLeases(ctx, env.JS, scheduler.WithLeaseBucket(names+"_leases"))
	if err != nil {
		return StormResult{}, err
	}
	cleanups = append(cleanups, func() { _ = env.JS.DeleteKeyValue(context.Background(), names+"_leases") })
	circuits, err := circuit.OpenStore(ctx, env.JS, circuit.WithBucket(names+"_circuits"), circuit.WithStorage(env.Storage))
	if err != nil {
		return StormResult{}, err
	}
	cleanups = append(cleanups, func() { _ = env.JS.DeleteKeyValue(context.Background(), names+"_circuits") })
	tr := &stormTransitions{fn: circuit.Of(aggregate.FunctionInfo{ContextName: benchContext, ProcessorName: stormSend.Processor, Name: stormSend.Name})}
	watcher := circuits.Watcher("", log, tr.observe)
	drains, err := scheduler.OpenDrains(ctx, env.JS, names+"_drains", 1)
	if err != nil {
		return StormResult{}, err
	}
	cleanups = append(cleanups, func() { _ = env.JS.DeleteKeyValue(context.Background(), names+"_drains") })
	sched, err := scheduler.New(index, r.records, leases, scheduler.WithPeriod(c.SchedulerPeriod), scheduler.WithBatch(c.SchedulerBatch),
		scheduler.WithInitialDelay(0), scheduler.WithLogger(log),
		scheduler.WithDrains(scheduler.DrainConfig{Circuits: watcher, Store: circuits, CircuitPolicy: c.Circuit, Records: index, Progress: drains,
			Policy: scheduler.DrainPolicy{Rate: c.DrainRate}, Capacity: scheduler.ReplayRoom(env.JS, r.store.StreamName(aggregate.Context))}))
	if err != nil {
		return StormResult{}, err
	}
	rec, err := recorder.New(r.records)
	if err != nil {
		return StormResult{}, err
	}
	counted := &outcomes{FailureRecorder: rec}
	opts := []processor.Option{processor.WithRecorder(counted), processor.WithRecords(r.records), processor.WithLogger(log),
		processor.WithCircuitStore(circuits), processor.WithCircuitPolicy(c.Circuit)}
	if c.ImmediateRetries >= 0 {
		retry := processor.Retry{Retries: c.ImmediateRetries, Backoff: processor.DefaultRetry.Backoff}
		if c.RetryWait > 0 {
			retry.Backoff.Min = c.RetryWait
		}
		opts = append(opts, processor.WithImmediateRetry(retry))
	} else if c.RetryWait > 0 {
		retry := processor.DefaultRetry
		retry.Backoff.Min = c.RetryWait
		opts = append(opts, processor.WithImmediateRetry(retry))
	}
	p, err := processor.New(env.JS, r.store, benchContext, append(opts, c.Processor...)...)
	if err != nil {
		return StormResult{}, err
	}
	s := &stormState{total: 3 * c.Events, allOK: make(chan struct{})}
	for i := range s.ok {
		s.ok[i], s.seen[i] = map[string]bool{}, map[string]bool{}
	}
	spec := aggregate.RetrySpec{MaxRetries: 20, MinBackoff: int32(max(c.MinBackoff/time.Second, 0)), ExecutionTimeout: 120}
	for i, fn := range []processor.Function{stormSend, stormAudit, stormPost} {
		h := processor.HandleBody(func(ctx context.Context, d *processor.Delivery, b stormBody) error { return s.call(ctx, i, d, b) })
		if err := p.Register(fn, h, processor.WithRetrySpec(spec)); err != nil {
			return StormResult{}, err
		}
	}
	bg, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{proj.Run, index.Run, watcher.Run, sched.Run} {
		wg.Go(func() { _ = run(bg) })
	}
	cleanups = append(cleanups, func() { cancel(); wg.Wait() })
	stream := r.store.StreamName(benchContext)
	for _, g := range []string{"Mailer", "Ledger"} {
		durable := processor.DurableName(benchContext, g)
		cleanups = append(cleanups, func() { _ = env.JS.DeleteConsumer(context.Background(), stream, durable) })
	}
	stopProc, err := startProcessor(ctx, p)
	if err != nil {
		return StormResult{}, err
	}
	cleanups = append(cleanups, stopProc)

	// Watch the backlogs while the storm runs.
	peaks := map[string]*atomic.Uint64{"Mailer": {}, "Ledger": {}}
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watch sync.WaitGroup
	watch.Go(func() { watchBacklogs(watchCtx, env.JS, stream, peaks) })
	defer func() { stopWatch(); watch.Wait() }()

	start := time.Now()
	s.outageStart.Store(start.Add(c.Before).UnixNano())
	s.outageEnd.Store(start.Add(c.Before + c.Outage).UnixNano())
	var phases sync.WaitGroup
	phases.Go(func() {
		if sleepUntil(ctx, start.Add(c.Before)) != nil {
			return
		}
		s.failing.Store(true)
		s.outage.Store(true)
		log.Info("storm: outage begins", "function", "Mailer.send", "for", c.Outage, "flapDown", c.FlapDown, "flapUp", c.FlapUp)
		if c.FlapDown > 0 {
			// Down, up, down, ... until the outage's end.
			at := start.Add(c.Before)
			for down := true; ; down = !down {
				if down {
					at = at.Add(c.FlapDown)
				} else {
					at = at.Add(c.FlapUp)
				}
				if !at.Before(start.Add(c.Before + c.Outage)) {
					break
				}
				if sleepUntil(ctx, at) != nil {
					return
				}
				s.failing.Store(!down)
			}
		}
		if sleepUntil(ctx, start.Add(c.Before+c.Outage)) != nil {
			return
		}
		s.failing.Store(false)
		s.outage.Store(false)
		log.Info("storm: outage ends")
	})
	err = publishStorm(ctx, r, c, start)
	phases.Wait()
	if err != nil {
		return StormResult{}, err
	}
	end := start.Add(c.Before + c.Outage)
	recovery := -1.0
	select {
	case <-s.allOK:
		recovery = max(time.Since(end).Seconds(), 0)
	case <-time.After(time.Until(end.Add(c.Drain))):
	case <-ctx.Done():
		return StormResult{}, ctx.Err()
	}
	res := StormResult{Config: c, Events: c.Events, RecoverySeconds: recovery, Seconds: time.Since(start).Seconds(),
		Calls: map[string]uint64{}, ReplayCalls: map[string]uint64{}, CallsDuringOutage: map[string]uint64{}, ReplayCallsDuringOutage: map[string]uint64{},
		Refused: map[string]uint64{}, Probes: map[string]uint64{}, Reruns: map[string]uint64{}, Succeeded: map[string]int{},
		BacklogPeak: map[string]uint64{}, RecordsCreated: counted.created.Load(), AlreadyRecorded: counted.already.Load()}
	res.RecordsByStatus, res.RecordsOpen = settledRecords(ctx, index)
	s.mu.Lock()
	for i, name := range StormFunctions {
		res.Calls[name], res.CallsDuringOutage[name], res.Reruns[name] = s.calls[i].Load(), s.during[i].Load(), s.reruns[i].Load()
		res.ReplayCalls[name], res.ReplayCallsDuringOutage[name] = s.replays[i].Load(), s.replaysDuring[i].Load()
		res.Succeeded[name] = len(s.ok[i])
		fn := []processor.Function{stormSend, stormAudit, stormPost}[i]
		if m := p.FunctionMetrics(fn.Processor, fn.Name); m != nil {
			res.Refused[name], res.Probes[name] = m.Refused.Load(), m.Probes.Load()
		}
	}
	res.Sibling = s.lat[1].phases()
	res.Other = s.lat[2].phases()
	s.mu.Unlock()
	for g, v := range peaks {
		res.BacklogPeak[g] = v.Load()
	}
	res.Transitions = tr.since(start.Add(c.Before))
	if st, _, err := circuits.Get(ctx, tr.fn); err == nil {
		res.FinalCircuit = st.Phase
	} else {
		res.FinalCircuit = circuit.Closed
	}
	// The drain judges its last step a tick after the last replay.
	for deadline := time.Now().Add(10 * time.Second); ; {
		d, ok, err := drains.Get(ctx, tr.fn)
		if err == nil && ok {
			res.Drain = &d
		}
		if res.Drain == nil || !res.Drain.Draining() || time.Now().After(deadline) || sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) != nil {
			break
		}
	}
	res.DrainProbes = sched.Stats().Drains.Probes
	return res, nil
}

// settledRecords counts the storm's records by status once the index has
// none FAILED or PREPARED (or 10 s passed: the last replays' outcomes may
// still be on their way), and how many are not SUCCEEDED.
func settledRecords(ctx context.Context, index *projection.Index) (map[string]int, int) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		by := map[string]int{}
		open := 0
		for _, st := range aggregate.Statuses {
			n, err := index.Count(projection.Filter{Status: st})
			if err != nil {
				continue
			}
			if n > 0 {
				by[string(st)] = n
			}
			if st != aggregate.StatusSucceeded {
				open += n
			}
		}
		if open == 0 || time.Now().After(deadline) || sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) != nil {
			return by, open
		}
	}
}

// stormTransitions collects a circuit's transitions from the watch of the
// bucket, each once.
type stormTransitions struct {
	fn   circuit.Function
	mu   sync.Mutex
	seq  int64
	seen []circuit.Transition
}

func (t *stormTransitions) observe(st circuit.State, _ uint64) {
	if st.Function != t.fn {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tr := range st.Transitions {
		if tr.Seq > t.seq {
			t.seq = tr.Seq
			t.seen = append(t.seen, tr)
		}
	}
}

func (t *stormTransitions) since(origin time.Time) []StormTransition {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]StormTransition, 0, len(t.seen))
	for _, tr := range t.seen {
		out = append(out, StormTransition{At: float64(tr.At-origin.UnixMilli()) / 1000, From: tr.From, To: tr.To, Cause: tr.Cause,
			Failures: tr.Failures, Calls: tr.Calls, CoolDown: float64(tr.CoolDownMs) / 1000})
	}
	return out
}

// publishStorm appends c.Events events, one new order each, at c.Rate a
// second from start.
func publishStorm(ctx context.Context, r *rig, c StormConfig, start time.Time) error {
	for i := range c.Events {
		at := start.Add(time.Duration(float64(i) / float64(c.Rate) * float64(time.Second)))
		if err := sleepUntil(ctx, at); err != nil {
			return err
		}
		body := []byte(`{"at":` + strconv.FormatInt(time.Now().UnixNano(), 10) + `}`)
		st := eventstore.Stream{
			ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: benchContext, Type: "order", ID: "storm-" + strconv.Itoa(i)},
			Version: 1, CommandID: uuid.NewString(), CreateTime: time.Now().UnixMilli(),
			Events: []eventstore.Event{{ID: uuid.NewString(), Name: "order_placed", Body: body}},
		}
		if _, err := r.store.Append(ctx, st, 0); err != nil {
			return fmt.Errorf("storm: append event %d: %w", i, err)
		}
	}
	return nil
}

// watchBacklogs keeps, for each processor, the largest pending +
// ack-pending count of its consumer, polled every 100 ms until ctx ends.
func watchBacklogs(ctx context.Context, js jetstream.JetStream, stream string, peaks map[string]*atomic.Uint64) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		for g, peak := range peaks {
			cons, err := js.Consumer(ctx, stream, processor.DurableName(benchContext, g))
			if err != nil {
				continue
			}
			info, err := cons.Info(ctx)
			if err != nil {
				continue
			}
			if n := info.NumPending + uint64(info.NumAckPending); n > peak.Load() {
				peak.Store(n)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *stormLatencies) phases() StormPhases {
	return StormPhases{Before: latencyOf(l.before), During: latencyOf(l.during), After: latencyOf(l.after)}
}

func latencyOf(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return Latency{N: len(s), P50: ms(at(0.50)), P99: ms(at(0.99)), Max: ms(s[len(s)-1])}
}
