package processor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/processor"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

// The livelock of the circuit's probes, under kill -9: a child process runs
// Mailer.send with the default circuit and replays; 30 % of the events fail
// for a while after they are appended (their first calls fail, later ones
// succeed), the others succeed; the control plane (projector, index,
// scheduler with its drains, on a short period) runs in the test; the child
// is killed with SIGKILL 15 times, each after 0.5–3 s. In the end every
// event succeeded, every record SUCCEEDED, and no record was prepared twice
// for one attempt. Before the circuit judged the dependency, the replays of
// such records counted as evidence against it, the scheduler probed with
// the oldest (failing) record, and the records waited for a drain that
// never started; here the circuit never opens, and no healthy event is
// refused or recorded.
const livelockChildEnv = "AMENDS_LIVELOCK_KILL_CHILD"

type livelockEvent struct {
	FailUntil int64 `json:"failUntil"` // unix ms: calls before it fail
}

func TestCircuitLivelockKillLoop(t *testing.T) {
	if os.Getenv(livelockChildEnv) != "" {
		livelockChild()
		return
	}
	rig := newKillRig(t, "TestCircuitLivelockKillLoop", livelockChildEnv)
	js, store := rig.js, rig.store
	ctx := t.Context()
	quiet := slog.New(slog.DiscardHandler)
	views, err := projection.OpenViews(ctx, js)
	require.NoError(t, err)
	proj, err := projection.NewProjector(js, store, views, projection.WithLogger(quiet))
	require.NoError(t, err)
	index, err := projection.NewIndex(views, store)
	require.NoError(t, err)
	circuits, err := circuit.OpenStore(ctx, js)
	require.NoError(t, err)
	watcher := circuits.Watcher("", quiet, nil)
	leases, err := scheduler.OpenLeases(ctx, js)
	require.NoError(t, err)
	drains, err := circuit.OpenDrains(ctx, js, "", 1)
	require.NoError(t, err)
	svc := aggregate.NewService(store)
	sched, err := scheduler.New(index, svc, leases, scheduler.WithPeriod(200*time.Millisecond), scheduler.WithInitialDelay(0), scheduler.WithLogger(quiet),
		scheduler.WithDrains(scheduler.DrainConfig{Circuits: watcher, Store: circuits, Records: index, Progress: drains,
			Capacity: scheduler.ReplayRoom(js, store.StreamName(aggregate.Context))}))
	require.NoError(t, err)
	bg, cancelBG := context.WithCancel(context.Background())
	var runs sync.WaitGroup
	for _, run := range []func(context.Context) error{proj.Run, index.Run, watcher.Run, sched.Run} {
		runs.Go(func() { _ = run(bg) })
	}
	t.Cleanup(func() { cancelBG(); runs.Wait() })

	var mu sync.Mutex
	var events []string
	failing := map[string]bool{}
	appendCtx, stopAppending := context.WithCancel(context.Background())
	var app sync.WaitGroup
	app.Go(func() {
		r := rand.New(rand.NewPCG(11, 12))
		for i := 0; appendCtx.Err() == nil && i < 300; i++ {
			var e livelockEvent
			bad := r.IntN(100) < 30
			if bad {
				e.FailUntil = time.Now().Add(time.Duration(1000+r.IntN(2000)) * time.Millisecond).UnixMilli()
			}
			body, _ := json.Marshal(e)
			eid := uuid.NewString()
			st := eventstore.Stream{ID: uuid.NewString(), Aggregate: order(fmt.Sprintf("l-%d", i)), CreateTime: t0,
				Events: []eventstore.Event{{ID: eid, Name: "order_placed", Body: body}}}
			if _, err := store.Append(context.Background(), st, 0); err == nil {
				mu.Lock()
				events, failing[eid] = append(events, eid), bad
				mu.Unlock()
			}
			time.Sleep(60 * time.Millisecond) // the storm's rate, not a wait for a result
		}
	})
	r := rand.New(rand.NewPCG(13, 14))
	for i := range kills(15) {
		cmd := rig.child()
		time.Sleep(time.Duration(500+r.IntN(2500)) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL), "kill %d", i)
		_ = cmd.Wait()
	}
	stopAppending()
	app.Wait()
	rig.last()

	mu.Lock()
	defer mu.Unlock()
	send := info("Mailer", "send")
	require.Eventually(t, func() bool {
		for _, eid := range events {
			id := aggregate.RecordID(eid, send)
			st, _, err := svc.Get(context.Background(), id)
			if err == nil && st.Status != aggregate.StatusSucceeded {
				return false
			}
		}
		calls := readStormCalls(t, rig.logPath)
		for _, eid := range events {
			if !contains(calls["send "+eid], "ok") {
				return false
			}
		}
		return true
	}, 3*time.Minute, 200*time.Millisecond, "every event succeeded on send, every record SUCCEEDED")
	records := 0
	for _, eid := range events {
		id := aggregate.RecordID(eid, send)
		attempts := map[int32]bool{}
		streams, err := store.Load(context.Background(), aggregate.RecordAggregate(id), 1)
		if err != nil {
			require.ErrorIs(t, err, eventstore.ErrNotFound)
			continue
		}
		records++
		assert.True(t, failing[eid], "a record of event %s, which never failed: a healthy event refused", eid)
		s := aggregate.State{ID: id}
		for _, st := range streams {
			for _, ev := range st.Events {
				e, err := aggregate.DecodeEvent(ev.Name, ev.Body)
				require.NoError(t, err)
				s = aggregate.Evolve(s, e)
				if _, ok := e.(aggregate.CompensationPrepared); ok {
					assert.False(t, attempts[s.Attempt()], "record %s prepared twice for attempt %d", id, s.Attempt())
					attempts[s.Attempt()] = true
				}
			}
		}
	}
	assert.Positive(t, records, "some events failed and were recorded")
	st, _, err := circuits.Get(context.Background(), circuit.Of(send))
	if err == nil {
		assert.Zero(t, st.Counts.Opened, "events failing for their own reason never open the circuit: %+v", st.Transitions)
	} else {
		require.ErrorIs(t, err, circuit.ErrNotFound, "never written: it never opened")
	}
	t.Logf("%d events, %d failing for a while, %d records, all SUCCEEDED", len(events), count(failing), records)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func count(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// livelockChild is the child process: Mailer.send with the default
// circuit, replays on, a retry spec with a 1 s backoff; each call is
// logged before it returns.
func livelockChild() {
	c := newKillChild(livelockChildEnv, slog.LevelWarn)
	p, err := processor.New(c.js, c.store, ctxName, processor.WithRecorder(c.rec), processor.WithRecords(c.svc),
		processor.WithLogger(c.logger), processor.WithAckWait(time.Second), processor.WithNakDelay(20*time.Millisecond),
		processor.WithImmediateRetry(processor.Retry{}))
	if err != nil {
		childFail(err)
	}
	var mu sync.Mutex
	send := processor.HandleBody(func(_ context.Context, d *processor.Delivery, e livelockEvent) error {
		ok := time.Now().UnixMilli() >= e.FailUntil
		mu.Lock()
		result := "fail"
		if ok {
			result = "ok"
		}
		fmt.Fprintf(c.calls, "send %s %s\n", d.Event.ID, result)
		mu.Unlock()
		if !ok {
			return errBoom
		}
		return nil
	})
	spec := aggregate.RetrySpec{MaxRetries: 20, MinBackoff: 1, ExecutionTimeout: 10}
	if err := p.Register(fn("Mailer", "send"), send, processor.RetrySpec(spec)); err != nil {
		childFail(err)
	}
	c.run(p)
}
