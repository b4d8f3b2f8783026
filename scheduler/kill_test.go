package scheduler_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/amends-dev/amends/aggregate"
	"github.com/amends-dev/amends/api"
	"github.com/amends-dev/amends/circuit"
	"github.com/amends-dev/amends/eventstore/jsstore"
	"github.com/amends-dev/amends/internal/natstest"
	"github.com/amends-dev/amends/projection"
	"github.com/amends-dev/amends/scheduler"
)

// The kill -9 loop during a drain: a child process runs the scheduler with
// its drains while the test plays the processor (it replays every prepared
// record) and kills the child with SIGKILL at random moments, then starts
// it again; the next one takes the lease over once it expires and goes on
// with the drain from its progress in the bucket. In the end every record
// of the outage SUCCEEDED (nothing lost) and each was prepared exactly
// once (nothing twice, whatever moment the kills hit). AMENDS_KILLS sets
// the number of kills (8 by default):
//
//	AMENDS_KILLS=40 go test -count=1 -run TestDrainKillLoop -v ./scheduler/
const drainChildEnv = "AMENDS_DRAIN_CHILD"

func TestDrainKillLoop(t *testing.T) {
	if url := os.Getenv(drainChildEnv); url != "" {
		drainChild(url)
		return
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	kills := 8
	if n, err := strconv.Atoi(os.Getenv("AMENDS_KILLS")); err == nil && n > 0 {
		kills = n
	}
	srv := natstest.NewListening(t) // the children connect to it
	_, js := srv.Connect()
	e := newEnv(t, js, 1, time.Second) // the projector and index of the test; the lease bucket the children share
	e.clock.Set(time.Now())

	// 400 records of an outage, the circuit closed again: a drain to do.
	const records = 400
	var ids []string
	versions := map[string]uint64{}
	for i := range records {
		evt := fmt.Sprintf("evt-%05d", i)
		id := aggregate.RecordID(evt, fn)
		r, err := e.svc.Execute(t.Context(), id, aggregate.CreateExecutionFailed{
			EventID:     aggregate.EventID{ID: evt, AggregateID: aggregate.WireAggregateID{ContextName: "order", AggregateName: "order", AggregateID: "o-" + evt}, Version: 1},
			Function:    fn,
			Error:       aggregate.ErrorDetails{ErrorCode: circuit.ErrorCode, ErrorMsg: "smtp 451"},
			ExecuteAt:   time.Now().UnixMilli(),
			RetrySpec:   &aggregate.RetrySpec{MaxRetries: 10, MinBackoff: 3600, ExecutionTimeout: 60},
			Recoverable: aggregate.Recoverable,
		}, aggregate.Meta{Actor: "test"})
		require.NoError(t, err)
		ids = append(ids, id)
		versions[id] = r.Version
	}
	e.indexed(t, versions)
	cs, err := circuit.OpenStore(t.Context(), js)
	require.NoError(t, err)
	for _, to := range []circuit.Phase{circuit.Open, circuit.Closed} {
		_, _, _, err = cs.Update(t.Context(), fnCircuit, func(c circuit.State) (circuit.State, bool) {
			return circuit.Evolve(c, time.Now(), circuit.Policy{}, circuit.OperatorSet{To: to, Actor: "ops", Reason: "test"})
		})
		require.NoError(t, err)
	}

	// The processor: replays every prepared record, a little slowly, so
	// that steps are under way when the kills come.
	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	var replays atomic.Int64
	bg.Go(func() {
		for ctx.Err() == nil {
			page, err := e.index.List(api.Query{Filter: api.Filter{Status: aggregate.StatusPrepared}, Limit: api.MaxLimit})
			if err == nil {
				for _, it := range page.Items {
					time.Sleep(time.Millisecond) // the pace of the dependency, not a wait for a result
					if _, err := e.svc.Execute(ctx, it.ID, aggregate.ApplyExecutionSuccess{ExecuteAt: time.Now().UnixMilli(), Attempt: it.Retries}, aggregate.Meta{Actor: "replayer"}); err == nil {
						replays.Add(1)
					}
				}
			}
			time.Sleep(5 * time.Millisecond) // the replay consumer's pace
		}
	})
	t.Cleanup(func() { cancel(); bg.Wait() })

	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDrainKillLoop$", "-test.count=1")
		cmd.Env = append(os.Environ(), drainChildEnv+"="+srv.ClientURL())
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		return cmd
	}
	drains, err := circuit.OpenDrains(t.Context(), js, "", 1)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range kills {
		cmd := child()
		time.Sleep(time.Duration(600+r.IntN(900)) * time.Millisecond) // when to kill: the point of the test
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL), "kill %d", i)
		_ = cmd.Wait()
	}
	d, _, _ := drains.Get(t.Context(), fnCircuit)
	t.Logf("after %d kills: drain %s, %d released, %d steps; %d replays", kills, d.Phase, d.Released, d.Judged, replays.Load())

	require.NotEqual(t, circuit.DrainDone, d.Phase, "the kills came during the drain")
	// A last child runs until the drain is done.
	cmd := child()
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
	done := assert.Eventually(t, func() bool {
		d, ok, err := drains.Get(t.Context(), fnCircuit)
		return err == nil && ok && d.Phase == circuit.DrainDone
	}, 2*time.Minute, 50*time.Millisecond, "the drain is done")
	if !done {
		last, _, _ := drains.Get(t.Context(), fnCircuit)
		t.Fatalf("the drain stayed %s: %s; %d replays", last.Phase, last.Note, replays.Load())
	}
	for _, id := range ids {
		s, _, err := e.svc.Get(t.Context(), id)
		require.NoError(t, err)
		assert.Equal(t, aggregate.StatusSucceeded, s.Status, "%s is not lost", id)
		assert.Len(t, e.prepares(t, id), 1, "%s is prepared once", id)
	}
	d, _, _ = drains.Get(t.Context(), fnCircuit)
	// A kill between a step's prepares and the write of its progress leaves
	// those records out of the counts (they are prepared, replayed and
	// SUCCEEDED all the same): the counts are at most the records.
	assert.LessOrEqual(t, d.Released, records, "no record counted twice")
	assert.Zero(t, d.Failed)
	t.Logf("%d kills; drain done: %d released in %d steps; every record SUCCEEDED, each prepared once", kills, d.Released, d.Judged)
}

// drainChild runs the scheduler with drains on the NATS server at url
// until it is killed.
func drainChild(url string) {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "drain child:", err)
		os.Exit(2)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		fail(err)
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(10*time.Second))
	if err != nil {
		fail(err)
	}
	store, err := jsstore.New(js)
	if err != nil {
		fail(err)
	}
	views, err := projection.OpenViews(ctx, js)
	if err != nil {
		fail(err)
	}
	index, err := projection.NewIndex(views, store)
	if err != nil {
		fail(err)
	}
	leases, err := scheduler.OpenLeases(ctx, js, scheduler.WithLeaseTTL(time.Second))
	if err != nil {
		fail(err)
	}
	cs, err := circuit.OpenStore(ctx, js)
	if err != nil {
		fail(err)
	}
	// Warnings and errors go to the test's output, so that a drain that
	// does not finish says why.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("child", os.Getpid())
	watcher := cs.Watcher("", logger, nil)
	drains, err := circuit.OpenDrains(ctx, js, "", 1)
	if err != nil {
		fail(err)
	}
	svc := aggregate.NewService(store)
	s, err := scheduler.New(index, svc, leases, scheduler.WithLogger(logger), scheduler.WithPeriod(time.Hour),
		scheduler.WithDrains(scheduler.DrainConfig{Circuits: watcher, Store: cs, Records: index, Progress: drains,
			Policy: scheduler.DrainPolicy{Rate: 30, Tick: 50 * time.Millisecond}}))
	if err != nil {
		fail(err)
	}
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{index.Run, watcher.Run, s.Run} {
		wg.Go(func() { _ = run(ctx) })
	}
	wg.Wait()
}
