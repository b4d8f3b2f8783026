package processor_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/recorder"
)

// orderLog is what three functions of one processor saw: calls in time
// order, by (function, aggregate), each with its version, whether it was a
// replay, and the processor generation (restarts) it happened in.
type orderLog struct {
	mu sync.Mutex
	// calls per "function/aggregate".
	calls map[string][]orderCall
	// failLeft per "aggregate@version": failures left of the failing one.
	failLeft map[string]int
	// recFail per event id: recordings to refuse (a redelivery follows).
	recFail map[string]int
	// naked per "event/generation": a recording of one of its functions
	// was refused, so its message comes back in that generation.
	naked map[string]bool
	// ok per "function/event": it succeeded at least once.
	ok map[string]bool
	// records the failures recorded, to replay them in the end.
	records map[string]bool
	// appended per event: the generation it was appended in. A message of
	// an earlier generation may be a redelivery, which the server hands
	// out in no promised order (it re-queues one it failed to deliver to a
	// stopped instance's pull behind the others).
	appended map[string]int64
	gen      atomic.Int64
}

type orderCall struct {
	v       uint64
	event   string
	replay  bool
	gen     int64
	success bool
}

func (l *orderLog) handler(name string, slow bool) processor.Handler {
	return func(ctx context.Context, d *processor.Delivery) error {
		if slow {
			time.Sleep(time.Duration(len(d.Event.ID)%3) * time.Millisecond) // a call that takes a while
		}
		_, replay := processor.CompensationFrom(ctx)
		id, v := d.Stream.Aggregate.ID, d.Stream.Version
		l.mu.Lock()
		defer l.mu.Unlock()
		fail := false
		if name == "fail" && l.failLeft[at(id, v)] > 0 {
			l.failLeft[at(id, v)]--
			fail = true
		}
		k := name + "/" + id
		l.calls[k] = append(l.calls[k], orderCall{v: v, event: d.Event.ID, replay: replay, gen: l.gen.Load(), success: !fail})
		if fail {
			return failure.Recoverable(errBoom)
		}
		l.ok[name+"/"+d.Event.ID] = true
		return nil
	}
}

// Record refuses the recordings the test asked to refuse, and remembers
// the records created.
type orderRecorder struct {
	processor.FailureRecorder
	l *orderLog
}

func (r orderRecorder) Record(ctx context.Context, x processor.Execution) (processor.Outcome, error) {
	r.l.mu.Lock()
	if x.Err != nil && x.Compensation == nil && r.l.recFail[x.EventID.ID] > 0 {
		r.l.recFail[x.EventID.ID]--
		r.l.naked[x.EventID.ID+"/"+fmt.Sprint(r.l.gen.Load())] = true
		r.l.mu.Unlock()
		return processor.OutcomeRecordingFailed, errBoom
	}
	r.l.mu.Unlock()
	out, err := r.FailureRecorder.Record(ctx, x)
	if out == processor.OutcomeRecorded || out == processor.OutcomeAlreadyRecorded {
		r.l.mu.Lock()
		r.l.records[aggregate.RecordID(x.EventID.ID, *x.Function)] = true
		r.l.mu.Unlock()
	}
	return out, err
}

var orderRuns atomic.Int64

// Random interleavings of events, failing (retried at once on real
// timers, or recorded and replayed), slow and succeeding functions,
// refused recordings (redeliveries) and restarts: every function sees each
// aggregate's events delivered for the first time in version order, its immediate
// retries of one event are never interleaved with another event of the
// aggregate, a function that succeeded on an event is not called on it
// again by the same processor, except after a redelivery of it, and in the
// end every event reached every function with success.
func TestPerFunctionOrderProperty(t *testing.T) {
	js, store, svc, rec := propertyEnv(t, 10)
	rapid.Check(t, func(rt *rapid.T) {
		bc := fmt.Sprintf("order%d", orderRuns.Add(1))
		if err := store.Provision(context.Background(), bc, aggregate.Context); err != nil {
			rt.Fatal(err)
		}
		l := &orderLog{calls: map[string][]orderCall{}, failLeft: map[string]int{}, recFail: map[string]int{}, naked: map[string]bool{},
			ok: map[string]bool{}, records: map[string]bool{}, appended: map[string]int64{}}
		start := func() (*processor.Processor, context.CancelFunc) {
			p, err := processor.New(js, store, bc, processor.WithRecorder(orderRecorder{rec, l}), processor.WithRecords(svc),
				processor.WithLogger(quietLogger()), processor.WithNakDelay(10*time.Millisecond), processor.WithShutdownTimeout(0),
				// The default circuit: a function failing a few calls of some
				// events is no dead dependency.
				processor.WithConcurrency(2), processor.WithImmediateRetry(processor.Retry{Retries: 2, Backoff: processor.Backoff{Min: 2 * time.Millisecond}}))
			if err != nil {
				rt.Fatal(err)
			}
			for _, f := range []struct {
				name string
				slow bool
			}{{"fail", false}, {"slow", true}, {"ok", false}} {
				if err := p.Register(fn("P", f.name), l.handler(f.name, f.slow)); err != nil {
					rt.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			if err := p.Start(ctx); err != nil {
				cancel()
				rt.Fatal(err)
			}
			return p, cancel
		}
		p, stop := start()
		defer func() { stop(); _ = p.Wait() }()
		versions := map[string]uint64{}
		var events []string
		steps := rapid.IntRange(4, 30).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 7).Draw(rt, "action") {
			case 0, 1, 2, 3, 4: // an event: failing a few times (3+ is recorded), its recording refused or not
				id := fmt.Sprintf("o-%d", rapid.IntRange(0, 2).Draw(rt, "aggregate"))
				v := versions[id] + 1
				versions[id] = v
				eid := uuid.NewString()
				l.mu.Lock()
				l.failLeft[at(id, v)] = rapid.IntRange(0, 4).Draw(rt, "failures")
				l.recFail[eid] = rapid.IntRange(0, 1).Draw(rt, "refused recordings")
				l.appended[eid] = l.gen.Load()
				l.mu.Unlock()
				events = append(events, eid)
				st := eventstore.Stream{ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: bc, Type: "order", ID: id}, CreateTime: t0,
					Events: []eventstore.Event{{ID: eid, Name: "order_placed", Body: json.RawMessage(`{}`)}}}
				if _, err := store.Append(context.Background(), st, v-1); err != nil {
					rt.Fatal(err)
				}
			case 5: // restart
				stop()
				if err := p.Wait(); err != nil {
					rt.Fatal(err)
				}
				l.gen.Add(1)
				p, stop = start()
			case 6: // let things settle
				orderQuiet(rt, l, js, store, svc, bc)
			case 7: // a replay of every FAILED record
				replayFailed(l, svc)
			}
		}
		// Then replay what is recorded until every event succeeded everywhere.
		deadline := time.Now().Add(2 * waitFor)
		for !allOK(l, events) {
			if time.Now().After(deadline) {
				rt.Fatalf("not every event succeeded on every function: %v", missing(l, events))
			}
			orderQuiet(rt, l, js, store, svc, bc)
			replayFailed(l, svc)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for k, calls := range l.calls {
			if v := orderViolations(l, k, calls); v != "" {
				rt.Fatal(v)
			}
		}
	})
}

// orderViolations checks one (function, aggregate)'s calls; "" if none.
// A message comes back (a redelivery) when a recording of one of its
// functions was refused in the generation, or when a restart found it
// unsettled (it was appended in an earlier generation); only then may a
// version be called after a later one.
func orderViolations(l *orderLog, k string, calls []orderCall) string {
	var firstMax uint64
	firstGen := map[uint64]int64{}
	byGen := map[int64][]orderCall{}
	for _, c := range calls {
		if c.replay {
			continue
		}
		if _, seen := firstGen[c.v]; !seen {
			if c.v < firstMax && l.appended[c.event] == c.gen {
				return fmt.Sprintf("%s: first call of version %d after version %d: %+v", k, c.v, firstMax, calls)
			}
			firstGen[c.v], firstMax = c.gen, c.v
		}
		byGen[c.gen] = append(byGen[c.gen], c)
	}
	for g, gc := range byGen {
		done := map[uint64]bool{}
		var high uint64
		for _, c := range gc {
			back := l.naked[c.event+"/"+fmt.Sprint(g)] || l.appended[c.event] < g
			switch {
			case done[c.v]:
				return fmt.Sprintf("%s: generation %d called version %d again after it succeeded: %+v", k, g, c.v, gc)
			case c.v < high && !back:
				return fmt.Sprintf("%s: generation %d called version %d after version %d, which is no redelivery: %+v", k, g, c.v, high, gc)
			}
			high = max(high, c.v)
			if c.success {
				done[c.v] = true
			}
		}
	}
	return ""
}

func allOK(l *orderLog, events []string) bool { return len(missing(l, events)) == 0 }

func missing(l *orderLog, events []string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range events {
		for _, f := range []string{"fail", "slow", "ok"} {
			if !l.ok[f+"/"+e] {
				out = append(out, f+"/"+e)
			}
		}
	}
	return out
}

// replayFailed force-prepares every recorded FAILED record, as a
// scheduler would, so that its replay runs.
func replayFailed(l *orderLog, svc *aggregate.Service) {
	l.mu.Lock()
	ids := make([]string, 0, len(l.records))
	for id := range l.records {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	for _, id := range ids {
		if st, _, err := svc.Get(context.Background(), id); err == nil && st.Status == aggregate.StatusFailed {
			_, _ = svc.Execute(context.Background(), id, aggregate.ForcePrepareCompensation{}, aggregate.Meta{Actor: "test", Reason: "replay"})
		}
	}
}

// orderQuiet waits until the processor's consumers have settled every
// message (quietNow) and no recorded record is PREPARED.
func orderQuiet(rt *rapid.T, l *orderLog, js jetstream.JetStream, store *jsstore.Store, svc *aggregate.Service, bc string) {
	deadline := time.Now().Add(waitFor)
	for !consumersQuiet(js, store, bc) || prepared(l, svc) {
		if time.Now().After(deadline) {
			rt.Fatalf("context %s did not settle within %s", bc, waitFor)
		}
		time.Sleep(tick) // polling with a deadline
	}
}

// consumersQuiet reports whether processor P's durable has acked the
// context's every message and the replay consumer holds none.
func consumersQuiet(js jetstream.JetStream, store *jsstore.Store, bc string) bool {
	ctx := context.Background()
	s, err := js.Stream(ctx, store.StreamName(bc))
	if err != nil {
		return false
	}
	si, err := s.Info(ctx)
	if err != nil {
		return false
	}
	for _, c := range []struct {
		stream, durable string
		floor           uint64
	}{{store.StreamName(bc), processor.DurableName(bc, "P"), si.State.LastSeq}, {store.StreamName(aggregate.Context), processor.ReplayDurableName(bc), 0}} {
		cons, err := js.Consumer(ctx, c.stream, c.durable)
		if err != nil {
			return false
		}
		ci, err := cons.Info(ctx)
		if err != nil || ci.NumAckPending > 0 || ci.NumPending > 0 || ci.AckFloor.Stream < c.floor {
			return false
		}
	}
	return true
}

func prepared(l *orderLog, svc *aggregate.Service) bool {
	l.mu.Lock()
	ids := make([]string, 0, len(l.records))
	for id := range l.records {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	for _, id := range ids {
		if st, _, err := svc.Get(context.Background(), id); err != nil || st.Status == aggregate.StatusPrepared {
			return true
		}
	}
	return false
}

// propertyEnv is a property test's JetStream, store, record service and
// recorder, shared by its checks; it runs checks checks unless
// -rapid.checks says otherwise (each check runs real processors).
func propertyEnv(t *testing.T, checks int) (jetstream.JetStream, *jsstore.Store, *aggregate.Service, *recorder.Recorder) {
	t.Helper()
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		_ = f.Value.Set(fmt.Sprint(checks))
	}
	_, js := natstest.New(t).Connect()
	store, err := jsstore.New(js)
	require.NoError(t, err)
	svc := aggregate.NewService(store)
	rec, err := recorder.New(svc)
	require.NoError(t, err)
	return js, store, svc, rec
}
