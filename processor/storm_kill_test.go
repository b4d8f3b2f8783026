package processor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/failure"
	"github.com/amends-dev/amends/processor"
)

// The kill -9 loop during a storm: a child process runs Mailer.send,
// Mailer.audit and Ledger.post while the test appends events, a third of
// which Mailer.send fails every time (an outage: retried at once on
// timers, then recorded), a third once (the retry succeeds); the test
// kills the child with SIGKILL at random moments, with retries waiting,
// messages queued and recordings under way, and starts it again. In the
// end every event reached every function, every function succeeded on
// every event but the failing ones' send, and each of those has exactly
// one record, created once. AMENDS_KILLS sets the number of kills (8 by
// default):
//
//	AMENDS_KILLS=50 go test -count=1 -run TestStormKillLoop -v ./processor/
const stormChildEnv = "AMENDS_STORM_KILL_CHILD"

type stormEvent struct {
	Fail int `json:"fail"` // how many calls of send fail in one process
}

func TestStormKillLoop(t *testing.T) {
	if os.Getenv(stormChildEnv) != "" {
		stormChild()
		return
	}
	kills := kills(8)
	rig := newKillRig(t, "TestStormKillLoop", stormChildEnv)
	js, store, logPath := rig.js, rig.store, rig.logPath

	var mu sync.Mutex
	failing := map[string]bool{} // events whose send always fails
	var events []string
	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Go(func() {
		r := rand.New(rand.NewPCG(5, 6))
		for i := 0; ctx.Err() == nil; i++ {
			fails := []int{0, 1, 99}[r.IntN(3)]
			body, _ := json.Marshal(stormEvent{Fail: fails})
			eid := uuid.NewString()
			st := eventstore.Stream{ID: uuid.NewString(), Aggregate: order(fmt.Sprintf("s-%d", i)), CreateTime: t0,
				Events: []eventstore.Event{{ID: eid, Name: "order_placed", Body: body}}}
			if _, err := store.Append(context.Background(), st, 0); err == nil {
				mu.Lock()
				events = append(events, eid)
				failing[eid] = fails > 2
				mu.Unlock()
			}
			time.Sleep(3 * time.Millisecond) // the storm's rate, not a wait for a result
		}
	})
	rig.killLoop(kills, rand.New(rand.NewPCG(7, 8)))
	cancel()
	bg.Wait()

	// A last child runs until both processors acked everything.
	rig.last()
	require.Eventually(t, func() bool {
		return ackedAll(js, store, "Mailer") && ackedAll(js, store, "Ledger")
	}, 4*waitFor, 50*time.Millisecond, "every event acked by both processors")

	calls := readStormCalls(t, logPath)
	records := 0
	for _, eid := range events {
		for _, f := range []string{"send", "audit", "post"} {
			c := calls[f+" "+eid]
			require.NotEmpty(t, c, "%s never got event %s", f, eid)
			if f == "send" && failing[eid] {
				continue
			}
			assert.Contains(t, c, "ok", "%s never succeeded on event %s: %v", f, eid, c)
		}
		for _, f := range []aggregate.FunctionInfo{info("Mailer", "send"), info("Mailer", "audit"), info("Ledger", "post")} {
			created := createdEvents(t, store, aggregate.RecordID(eid, f))
			want := 0
			if f.Name == "send" && failing[eid] {
				want = 1
				records++
			}
			require.Equal(t, want, created, "records created for %s of event %s", f.Name, eid)
		}
	}
	t.Logf("%d kills, %d events, %d records: none lost, each final failure recorded once", kills, len(events), records)
}

// ackedAll reports whether processor proc's durable acked the context
// stream's every message.
func ackedAll(js jetstream.JetStream, store *jsstore.Store, proc string) bool {
	ctx := context.Background()
	s, err := js.Stream(ctx, store.StreamName(ctxName))
	if err != nil {
		return false
	}
	si, err := s.Info(ctx)
	if err != nil {
		return false
	}
	c, err := js.Consumer(ctx, store.StreamName(ctxName), processor.DurableName(ctxName, proc))
	if err != nil {
		return false
	}
	ci, err := c.Info(ctx)
	return err == nil && ci.AckFloor.Stream >= si.State.LastSeq && ci.NumAckPending == 0
}

// createdEvents counts the ExecutionFailedCreated events of record id.
func createdEvents(t *testing.T, store *jsstore.Store, id string) int {
	t.Helper()
	streams, err := store.Load(context.Background(), eventstore.AggregateID{Context: aggregate.Context, Type: aggregate.AggregateType, ID: id}, 1)
	if err != nil {
		require.ErrorIs(t, err, eventstore.ErrNotFound)
		return 0
	}
	n := 0
	for _, st := range streams {
		for _, e := range st.Events {
			if e.Name == aggregate.NameExecutionFailedCreated {
				n++
			}
		}
	}
	return n
}

// readStormCalls parses the children's log: "<function> <event> ok|fail"
// per call, into the results per "function event".
func readStormCalls(t *testing.T, path string) map[string][]string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		if len(parts) != 3 {
			continue // a line cut by the kill
		}
		out[parts[0]+" "+parts[1]] = append(out[parts[0]+" "+parts[1]], parts[2])
	}
	return out
}

// stormChild is the child process: the three functions, send failing the
// first Fail calls of each event in this process, with two immediate
// retries 30 ms apart; every call is logged before it returns.
func stormChild() {
	c := newKillChild(stormChildEnv, slog.LevelWarn)
	p, err := processor.New(c.js, c.store, ctxName, processor.WithRecorder(c.rec), processor.WithRecords(c.svc), processor.WithoutReplay(),
		processor.WithLogger(c.logger), processor.WithAckWait(time.Second), processor.WithNakDelay(20*time.Millisecond),
		processor.WithImmediateRetry(processor.Retry{Retries: 2, Backoff: processor.Backoff{Min: 30 * time.Millisecond}}),
		// Circuits off: a third of the events always fail and another third
		// fail their first call, so two thirds of first calls fail, more
		// than the half a circuit tolerates before it takes the dependency
		// for down (package circuit, "Evidence"); the events after it would
		// be recorded as refused. TestCircuitLivelockKillLoop is the kill
		// loop with the circuit on.
		processor.WithCircuitPolicy(circuit.Policy{Off: true}))
	if err != nil {
		childFail(err)
	}
	var mu sync.Mutex
	sent := map[string]int{}
	logCall := func(f, eid, result string) {
		mu.Lock()
		fmt.Fprintf(c.calls, "%s %s %s\n", f, eid, result)
		mu.Unlock()
	}
	send := processor.HandleBody(func(_ context.Context, d *processor.Delivery, e stormEvent) error {
		mu.Lock()
		sent[d.Event.ID]++
		n := sent[d.Event.ID]
		mu.Unlock()
		if n <= e.Fail {
			logCall("send", d.Event.ID, "fail")
			return failure.Recoverable(errBoom)
		}
		logCall("send", d.Event.ID, "ok")
		return nil
	})
	ok := func(name string) processor.Handler {
		return func(_ context.Context, d *processor.Delivery) error {
			logCall(name, d.Event.ID, "ok")
			return nil
		}
	}
	for _, r := range []struct {
		f processor.Function
		h processor.Handler
	}{{fn("Mailer", "send"), send}, {fn("Mailer", "audit"), ok("audit")}, {fn("Ledger", "post"), ok("post")}} {
		if err := p.Register(r.f, r.h); err != nil {
			childFail(err)
		}
	}
	c.run(p)
}
