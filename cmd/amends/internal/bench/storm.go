package bench

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/internal/bounds"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
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
	// BadEvents is the percentage (0 to 99) of events Mailer.send always
	// fails on for their own reason (a plain error, "550 bad address"),
	// chosen by a hash of the event id (BadEvent): the most common failure
	// there is, which no circuit may take for a dead dependency.
	BadEvents int `json:"badEvents,omitempty"`
	// Circuit is the functions' circuit policy (the zero Policy is
	// circuit.DefaultPolicy; Off turns the circuits off); DrainRate the
	// recovery drain's rate (0: scheduler.DefaultDrainRate).
	Circuit   circuit.Policy `json:"circuit"`
	DrainRate float64        `json:"drainRate,omitempty"`
	// Processor are more options of the service's processor (tests).
	Processor []processor.Option `json:"-"`
	// Dashboard, if set, serves the storm's control plane on it while the
	// storm runs: the HTTP API and the dashboard, without tokens (give it
	// a loopback listener), to watch the incident as an operator would.
	Dashboard net.Listener `json:"-"`
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
	Drain *circuit.Drain `json:"drain,omitempty"`
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
	// BadEvents counts the events Mailer.send fails on for their own
	// reason (StormConfig.BadEvents). The false trips of its circuit:
	// FalseOpens counts its openings while the dependency was up;
	// HealthyRefused the calls of healthy events refused while it was up,
	// HealthyRecorded the records made of them then (refused or not).
	BadEvents       int    `json:"badEvents"`
	FalseOpens      int    `json:"falseOpens"`
	HealthyRefused  uint64 `json:"healthyRefused"`
	HealthyRecorded uint64 `json:"healthyRecorded"`
	// StrayRecords counts the records the storm does not explain: of a
	// function other than Mailer.send, or of a healthy event whose live
	// call neither met the outage nor was refused by the circuit. It is 0
	// unless the engine records what did not fail.
	StrayRecords uint64 `json:"strayRecords"`
	// DueLateSeconds is the most the oldest due record waited for the
	// scheduler (now less its nextRetryAt, sampled every second) while
	// Mailer.send's circuit was closed and no drain held its records: the
	// scheduler keeps up when it stays within a period.
	DueLateSeconds float64 `json:"dueLateSeconds"`
}

// BadEvent reports whether Mailer.send fails on event id for its own
// reason when pct percent of events are bad: by an FNV-1a hash of the id,
// so that every call, retry and replay of that event fails alike.
func BadEvent(id string, pct int) bool {
	if pct <= 0 {
		return false
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32()%100) < pct
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

// withDefaults fills what c leaves zero.
func (c StormConfig) withDefaults() (StormConfig, error) {
	switch {
	case !bounds.Within(c.Rate, 1, 10000):
		return c, fmt.Errorf("storm rate must be between 1 and 10000 events/s, got %d", c.Rate)
	case c.Before < 0 || c.Outage < 0:
		return c, fmt.Errorf("storm phases must not be negative, got before %s and outage %s", c.Before, c.Outage)
	case c.FlapDown < 0 || c.FlapUp < 0 || (c.FlapDown == 0 && c.FlapUp != 0):
		return c, fmt.Errorf("storm flapping must be down and up for positive times, got down %s and up %s", c.FlapDown, c.FlapUp)
	case !bounds.Within(c.Events, 0, 1_000_000):
		return c, fmt.Errorf("storm events must be between 0 (rate × duration) and 1000000, got %d", c.Events)
	case !bounds.Within(c.BadEvents, 0, 99):
		return c, fmt.Errorf("storm bad events must be a percentage from 0 to 99, got %d", c.BadEvents)
	case !bounds.Within(c.ImmediateRetries, -1, 10):
		return c, fmt.Errorf("storm immediate retries must be between -1 (the default) and 10, got %d", c.ImmediateRetries)
	}
	return c.defaults(), nil
}

// defaults fills the storm's unset events, scheduler settings, flapping
// up time and drain time.
func (c StormConfig) defaults() StormConfig {
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
	return c
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
	sr := &stormRig{}
	defer sr.close()
	if err := sr.open(ctx, env, c, log); err != nil {
		return StormResult{}, err
	}

	// Watch the backlogs while the storm runs.
	peaks := map[string]*atomic.Uint64{"Mailer": {}, "Ledger": {}}
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watch sync.WaitGroup
	watch.Go(func() { watchBacklogs(watchCtx, env.JS, sr.stream, peaks) })
	var late atomic.Int64 // ms
	watch.Go(func() { sr.watchLateness(watchCtx, &late) })
	defer func() { stopWatch(); watch.Wait() }()

	start := time.Now()
	s := sr.state
	s.outageStart.Store(start.Add(c.Before).UnixNano())
	s.outageEnd.Store(start.Add(c.Before + c.Outage).UnixNano())
	var phases sync.WaitGroup
	phases.Go(func() { s.playOutage(ctx, c, start, log) })
	err = publishStorm(ctx, sr.rig, c, start, s.ids)
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
	res := sr.result(ctx, c, start, recovery, peaks)
	res.DueLateSeconds = float64(late.Load()) / 1000
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
			n, err := index.Count(api.Filter{Status: st})
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

// publishStorm appends c.Events events with ids, one new order each, at
// c.Rate a second from start.
func publishStorm(ctx context.Context, r *rig, c StormConfig, start time.Time, ids []string) error {
	for i := range c.Events {
		at := start.Add(time.Duration(float64(i) / float64(c.Rate) * float64(time.Second)))
		if err := sleepUntil(ctx, at); err != nil {
			return err
		}
		body := []byte(`{"at":` + strconv.FormatInt(time.Now().UnixNano(), 10) + `}`)
		st := eventstore.Stream{
			ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: benchContext, Type: "order", ID: "storm-" + strconv.Itoa(i)},
			Version: 1, CommandID: uuid.NewString(), CreateTime: time.Now().UnixMilli(),
			Events: []eventstore.Event{{ID: ids[i], Name: "order_placed", Body: body}},
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
