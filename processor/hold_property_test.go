package processor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"pgregory.net/rapid"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/processor"
)

// propLog is what the Ordered function saw, per aggregate.
type propLog struct {
	mu    sync.Mutex
	calls map[string][]uint64        // every call, in order
	ok    map[string]map[uint64]bool // versions handled successfully
	fail  map[string]int             // "id@v" → failures left
	order []string                   // violations
}

func (l *propLog) handle(_ context.Context, d *processor.Delivery) error {
	id, v := d.Stream.Aggregate.ID, d.Stream.Version
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.calls[id]; len(c) > 0 && c[len(c)-1] > v {
		l.order = append(l.order, fmt.Sprintf("%s: version %d after %d (calls %v)", id, v, c[len(c)-1], c))
	}
	l.calls[id] = append(l.calls[id], v)
	if l.fail[at(id, v)] > 0 {
		l.fail[at(id, v)]--
		return errBoom
	}
	if l.ok[id] == nil {
		l.ok[id] = make(map[uint64]bool)
	}
	l.ok[id][v] = true
	return nil
}

var propRuns = 0

// Random interleavings of events, failures, successes, restarts and
// operator actions never give an Ordered function an aggregate's events
// out of version order, and every event not skipped by an operator is
// handled in the end (an operator-released head counts as handled).
//
// It is one function (gocyclo 35) on purpose: the property is the switch
// of the actions rapid draws, over one model of the aggregate's events, and
// the actions share that model and the processor under test.
func TestOrderedProperty(t *testing.T) {
	js, store, svc, rec := propertyEnv(t, 12)
	hs, err := processor.OpenHolds(t.Context(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		propRuns++
		bc := fmt.Sprintf("prop%d", propRuns)
		if err := store.Provision(context.Background(), bc, aggregate.Context); err != nil {
			rt.Fatal(err)
		}
		log := &propLog{calls: map[string][]uint64{}, ok: map[string]map[uint64]bool{}, fail: map[string]int{}}
		start := func() (*processor.Processor, context.CancelFunc) {
			p, err := processor.New(js, store, bc, processor.WithRecorder(rec), processor.WithRecords(svc),
				processor.WithLogger(quietLogger()), processor.WithNakDelay(10*time.Millisecond),
				processor.WithAckWait(300*time.Millisecond), processor.WithShutdownTimeout(0), processor.WithConcurrency(4))
			if err != nil {
				rt.Fatal(err)
			}
			f := processor.Function{Processor: "Projector", Name: "onStep", AggregateTypes: []string{"order"}}
			if err := p.Register(f, log.handle, processor.Ordered()); err != nil {
				rt.Fatal(err)
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
		fi := aggregate.FunctionInfo{FunctionKind: aggregate.KindEvent, ContextName: bc, ProcessorName: "Projector", Name: "onStep"}
		versions := map[string]uint64{}
		skipped := map[string]map[uint64]bool{}
		resolved := map[string]map[uint64]bool{}
		mark := func(m map[string]map[uint64]bool, id string, v uint64) {
			if m[id] == nil {
				m[id] = map[uint64]bool{}
			}
			m[id][v] = true
		}
		holds := func() []api.Hold {
			list, _, err := hs.List(context.Background(), processor.HoldFilter{Context: bc}, processor.MaxHoldList)
			if err != nil {
				rt.Fatal(err)
			}
			return list
		}
		steps := rapid.IntRange(4, 24).Draw(rt, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(rt, "action") {
			case 0, 1, 2, 3: // an event, which may fail a few times
				id := fmt.Sprintf("o-%d", rapid.IntRange(0, 2).Draw(rt, "aggregate"))
				v := versions[id] + 1
				versions[id] = v
				log.mu.Lock()
				log.fail[at(id, v)] = rapid.IntRange(0, 2).Draw(rt, "failures")
				log.mu.Unlock()
				st := eventstore.Stream{ID: uuid.NewString(), Aggregate: eventstore.AggregateID{Context: bc, Type: "order", ID: id}, CreateTime: t0,
					Events: []eventstore.Event{{ID: uuid.NewString(), Name: "step", Body: json.RawMessage(`{}`)}}}
				if _, err := store.Append(context.Background(), st, v-1); err != nil {
					rt.Fatal(err)
				}
			case 4, 5: // the head's replay
				if l := holds(); len(l) > 0 {
					h := l[rapid.IntRange(0, len(l)-1).Draw(rt, "hold")]
					_, _ = svc.Execute(context.Background(), h.Head.Record, aggregate.ForcePrepareCompensation{}, aggregate.Meta{Actor: "test"})
				}
			case 6: // restart
				stop()
				if err := p.Wait(); err != nil {
					rt.Fatal(err)
				}
				p, stop = start()
			case 7: // operator release
				if l := holds(); len(l) > 0 {
					h := l[rapid.IntRange(0, len(l)-1).Draw(rt, "hold")]
					if !h.Releasing {
						if _, err := hs.Release(context.Background(), h.Key(), svc, processor.HoldAction{Actor: "op", Reason: "fixed", Now: time.Now()}); err == nil {
							mark(resolved, h.AggregateID, h.Head.Version)
						}
					}
				}
			case 8: // operator skip
				if l := holds(); len(l) > 0 {
					h := l[rapid.IntRange(0, len(l)-1).Draw(rt, "hold")]
					if len(h.Held) > 0 {
						r := h.Held[rapid.IntRange(0, len(h.Held)-1).Draw(rt, "held")]
						if _, err := hs.Skip(context.Background(), h.Key(), r.EventID, processor.HoldAction{Actor: "op", Reason: "skip", Now: time.Now()}); err == nil {
							mark(skipped, h.AggregateID, r.Version)
						}
					}
				}
			case 9: // let things settle
				quiet(rt, js, store, bc, hs)
			}
		}
		// Then everything succeeds: replay every head until no hold is left.
		log.mu.Lock()
		clear(log.fail)
		log.mu.Unlock()
		deadline := time.Now().Add(2 * waitFor)
		for {
			quiet(rt, js, store, bc, hs)
			l := holds()
			if len(l) == 0 {
				break
			}
			if time.Now().After(deadline) {
				rt.Fatalf("holds left: %+v", l)
			}
			for _, h := range l {
				if !h.Releasing {
					_, _ = svc.Execute(context.Background(), h.Head.Record, aggregate.ForcePrepareCompensation{}, aggregate.Meta{Actor: "test"})
				}
			}
		}
		quiet(rt, js, store, bc, hs)
		log.mu.Lock()
		defer log.mu.Unlock()
		if len(log.order) > 0 {
			rt.Fatalf("out of order: %v", log.order)
		}
		for id, last := range versions {
			for v := uint64(1); v <= last; v++ {
				if !log.ok[id][v] && !skipped[id][v] && !resolved[id][v] {
					rt.Fatalf("%s version %d was lost: calls %v, skipped %v, resolved %v", id, v, log.calls[id], skipped[id], resolved[id])
				}
			}
		}
		_ = fi
	})
}

// quiet waits until the context's durable and replay consumer have acked
// everything, no record of the context is PREPARED and no hold is being
// released.
func quiet(rt *rapid.T, js jetstream.JetStream, store *jsstore.Store, bc string, hs *processor.Holds) {
	deadline := time.Now().Add(waitFor)
	for !quietNow(js, store, bc, hs) {
		if time.Now().After(deadline) {
			rt.Fatalf("context %s did not settle within %s", bc, waitFor)
		}
		time.Sleep(tick) // polling with a deadline
	}
}

func quietNow(js jetstream.JetStream, store *jsstore.Store, bc string, hs *processor.Holds) bool {
	ctx := context.Background()
	for _, c := range []struct{ stream, durable string }{
		{store.StreamName(bc), processor.DurableName(bc, "Projector")},
		{store.StreamName(aggregate.Context), processor.ReplayDurableName(bc)},
	} {
		s, err := js.Stream(ctx, c.stream)
		if err != nil {
			return false
		}
		si, err := s.Info(ctx)
		if err != nil {
			return false
		}
		cons, err := js.Consumer(ctx, c.stream, c.durable)
		if err != nil {
			return false
		}
		ci, err := cons.Info(ctx)
		if err != nil || ci.NumAckPending > 0 || ci.NumPending > 0 || (c.durable != processor.ReplayDurableName(bc) && ci.AckFloor.Stream < si.State.LastSeq) {
			return false
		}
	}
	l, _, err := hs.List(ctx, processor.HoldFilter{Context: bc}, processor.MaxHoldList)
	if err != nil {
		return false
	}
	for _, h := range l {
		if h.Releasing {
			return false
		}
	}
	return true
}
